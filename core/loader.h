/* Has the dynamic loader loaded anything since a given moment? Every host collective asks
 * whether its buffers could be device memory, and a process that has not loaded libcuda
 * cannot hold any: this lets it know that libcuda is still absent without taking the loader's
 * lock (dl_iterate_phdr: a lock, an unlock and the walk, some 200 instructions, an eighth of
 * a small call). */
#ifndef ORB_CORE_LOADER_H
#define ORB_CORE_LOADER_H

/* How many objects the loader has ever loaded (glibc's dlpi_adds; never goes down). */
unsigned long long orb_loader_generation(void);

/* Marks this moment, if the loader's generation is still gen: the object at the end of the
 * loader's list is made one that is never unloaded (RTLD_NODELETE), so that whether anything
 * follows it can be read without the lock. Returns 1 when the mark is set; 0 when it cannot be
 * (something was loaded since gen, or the last object cannot be pinned): then
 * orb_loader_unchanged() says 0 until a later mark. Thread-safe; slow (dlopen): call it once a
 * generation, not once a call. */
int orb_loader_mark(unsigned long long gen);

/* 1 when no object loaded since the last mark is still loaded (the lock-free test: one load
 * and one compare); 0 when one is, or when there is no mark. Objects loaded into another
 * namespace (dlmopen) are not seen, as glibc's RTLD_NOLOAD does not see them either. */
int orb_loader_unchanged(void);

#endif
