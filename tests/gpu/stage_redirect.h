/* Include before tests/coll/test_coll.c: its orb_* calls go through the staging layer
 * (stage.h), so the host matrix checks the device path. */
#define orb_allreduce stage_allreduce
#define orb_broadcast stage_broadcast
#define orb_reduce stage_reduce
#define orb_gather stage_gather
#define orb_allgather stage_allgather
#define orb_reduce_scatter stage_reduce_scatter
#define orb_alltoall stage_alltoall
#define orb_alltoallv stage_alltoallv
#define orb_scatter stage_scatter
#define orb_send stage_send
#define orb_recv stage_recv
#define orb_group_start stage_group_start
#define orb_group_end stage_group_end
