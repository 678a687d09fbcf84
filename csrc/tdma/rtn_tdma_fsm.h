/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_fsm.h
 * @brief The TDMA states and what moves a station between them, as one pure
 *        function (in the manner of linuxptp's ptp_fsm()).
 *
 * The engine never sets a state itself: it raises an event (a Sync taken,
 * calibration done, the primary silent at the backup check ...) and takes
 * the state rtn_tdma_fsm() returns.  The function has no other input than
 * its arguments, so a test can walk every combination.
 */
#ifndef RTN_TDMA_FSM_H
#define RTN_TDMA_FSM_H

/* States (the numbers are the ones rtn_tdma_stats.state reports; rtnet/tdma_stats.py
 * builds its TdmaStateCode IntEnum from them) */
enum rtn_tdma_state {
	RTN_TDMA_ST_DOWN = 0,
	RTN_TDMA_ST_LISTEN = 1,	   /* master: listening for an active master */
	RTN_TDMA_ST_WAIT_SYNC = 2, /* slave: no Sync yet */
	RTN_TDMA_ST_CALIBRATING = 3,
	RTN_TDMA_ST_SYNCED = 4, /* slave: synchronised and calibrated, sending */
	RTN_TDMA_ST_MASTER = 5, /* primary master sending Sync */
	RTN_TDMA_ST_BACKUP_STANDBY = 6,
	RTN_TDMA_ST_BACKUP_ACTIVE = 7,
	RTN_TDMA_ST_SYNC_LOST = 8, /* no Sync for sync_loss_cycles: silent */
};
#define RTN_TDMA_N_STATES 9

/* What a station is, for the state machine */
#define RTN_TDMA_FSM_PRIMARY 0 /* master, no backup offset */
#define RTN_TDMA_FSM_BACKUP  1 /* master with a backup offset */
#define RTN_TDMA_FSM_SLAVE   2
#define RTN_TDMA_FSM_N_KINDS 3

/* Events */
#define RTN_TDMA_EV_ATTACH	   0 /* configured and started */
#define RTN_TDMA_EV_DETACH	   1
#define RTN_TDMA_EV_LISTEN_DONE	   2 /* master: listened, heard no active master */
#define RTN_TDMA_EV_SYNC	   3 /* a Sync was taken for the clock */
#define RTN_TDMA_EV_CALIBRATED	   4 /* the calibration rounds are done */
#define RTN_TDMA_EV_SYNC_TIMEOUT   5 /* sync_loss_cycles without a Sync taken */
#define RTN_TDMA_EV_PRIMARY_SILENT 6 /* backup check: no Sync from the primary */
#define RTN_TDMA_EV_PRIMARY_ALIVE  7 /* backup check: the primary's Sync is here */
#define RTN_TDMA_N_EVENTS	   8

/**
 * The state after @p event in @p state, for a station of @p kind
 * (RTN_TDMA_FSM_*) that is (@p calibrated != 0) or is not calibrated yet.
 * An event that means nothing in a state leaves it unchanged.
 */
int rtn_tdma_fsm(int state, int event, int kind, int calibrated);

#endif
