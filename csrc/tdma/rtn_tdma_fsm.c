/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_fsm.c
 * @brief The TDMA state machine (see rtn_tdma_fsm.h).
 *
 *   ATTACH          primary, backup -> LISTEN; slave -> WAIT_SYNC
 *   LISTEN_DONE     LISTEN -> MASTER (primary) or BACKUP_ACTIVE (backup)
 *   SYNC            LISTEN, WAIT_SYNC, SYNC_LOST -> working state if calibrated,
 *                   else CALIBRATING; BACKUP_ACTIVE -> BACKUP_STANDBY (calibrated)
 *                   or CALIBRATING (a backup that never calibrated)
 *   CALIBRATED      CALIBRATING -> working state
 *   SYNC_TIMEOUT    CALIBRATING, SYNCED -> SYNC_LOST (not a backup: it takes over)
 *   PRIMARY_SILENT  BACKUP_STANDBY -> BACKUP_ACTIVE
 *   PRIMARY_ALIVE   BACKUP_ACTIVE -> BACKUP_STANDBY
 *   DETACH          any -> DOWN
 *
 * The working state is MASTER for a primary (a restarted primary that joined
 * a backup's grid takes over once calibrated), BACKUP_STANDBY for a backup,
 * SYNCED for a slave.
 */
#include "rtn_tdma_fsm.h"

static int working(int kind)
{
	switch (kind) {
	case RTN_TDMA_FSM_PRIMARY:
		return RTN_TDMA_ST_MASTER;
	case RTN_TDMA_FSM_BACKUP:
		return RTN_TDMA_ST_BACKUP_STANDBY;
	default:
		return RTN_TDMA_ST_SYNCED;
	}
}

int rtn_tdma_fsm(int state, int event, int kind, int calibrated)
{
	int master = kind == RTN_TDMA_FSM_PRIMARY || kind == RTN_TDMA_FSM_BACKUP;

	switch (event) {
	case RTN_TDMA_EV_ATTACH:
		return master ? RTN_TDMA_ST_LISTEN : RTN_TDMA_ST_WAIT_SYNC;
	case RTN_TDMA_EV_DETACH:
		return RTN_TDMA_ST_DOWN;
	case RTN_TDMA_EV_LISTEN_DONE:
		if (state == RTN_TDMA_ST_LISTEN && master)
			return kind == RTN_TDMA_FSM_BACKUP ? RTN_TDMA_ST_BACKUP_ACTIVE :
							     RTN_TDMA_ST_MASTER;
		break;
	case RTN_TDMA_EV_SYNC:
		switch (state) {
		case RTN_TDMA_ST_LISTEN:
		case RTN_TDMA_ST_WAIT_SYNC:
		case RTN_TDMA_ST_SYNC_LOST:
			return calibrated ? working(kind) : RTN_TDMA_ST_CALIBRATING;
		case RTN_TDMA_ST_BACKUP_ACTIVE:
			return calibrated ? RTN_TDMA_ST_BACKUP_STANDBY : RTN_TDMA_ST_CALIBRATING;
		}
		break;
	case RTN_TDMA_EV_CALIBRATED:
		if (state == RTN_TDMA_ST_CALIBRATING)
			return working(kind);
		break;
	case RTN_TDMA_EV_SYNC_TIMEOUT:
		if ((state == RTN_TDMA_ST_CALIBRATING || state == RTN_TDMA_ST_SYNCED) &&
		    kind != RTN_TDMA_FSM_BACKUP)
			return RTN_TDMA_ST_SYNC_LOST;
		break;
	case RTN_TDMA_EV_PRIMARY_SILENT:
		if (state == RTN_TDMA_ST_BACKUP_STANDBY && kind == RTN_TDMA_FSM_BACKUP)
			return RTN_TDMA_ST_BACKUP_ACTIVE;
		break;
	case RTN_TDMA_EV_PRIMARY_ALIVE:
		if (state == RTN_TDMA_ST_BACKUP_ACTIVE && kind == RTN_TDMA_FSM_BACKUP)
			return RTN_TDMA_ST_BACKUP_STANDBY;
		break;
	}
	return state;
}
