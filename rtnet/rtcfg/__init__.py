"""RTcfg (EtherType 0x9022), RTnet's configuration service: the frames (frames), the
whitelisted configuration a server hands its clients (payload), the server and client
protocols as pure state machines (server, client, stations) and the ``rtcfg`` command (cli)."""
