/* Ends what thread_ranks.h began: after test_coll.c, the names are the driver's again. */
#undef nranks
#undef rank
#undef comm
#undef passed
#undef failed
#undef ran
#undef orb_comm_init_env
#undef orb_comm_destroy
#undef RANK_LOCAL
