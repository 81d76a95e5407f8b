/* A shared module for test_loader to load and unload: one object the loader did not have. */
int orb_loader_probe(void);
int orb_loader_probe(void) { return PROBE_ID; }
