/* Boot order of the rooms (mm_init / kmem_cache_init / kasan_init /
 * debug_objects_mem_init).  Rooms are added by later subsystems.
 *
 *   debug_objects_early_init   static pool of 1024 trackers (start_kernel,
 *                              before mm_init)
 *   odb_slab_init              kmem_cache_init
 *   debug_objects_mem_init     slab cache debug_objects_cache, replacement of
 *                              the static trackers, selftest, CPU scaling
 * Shutdown runs in reverse: debugobjects gives nothing back to the slab (its
 * trackers live in the arena and go with it), so it may go first.
 */
#include "kernel/kernel.h"
#include "kernel/rooms.h"
#include "slab/slab.h"
#include "debugobjects/debugobjects.h"
#include "kasan/kasan.h"

int odb_slab_early_init(struct odb_kernel *k);

/* Before the command line is parsed: the rooms' state that boot parameters
 * write into (slub_debug=, odebug.slub_path=, ...). */
int odb_rooms_early_init(struct odb_kernel *k)
{
	if (kasan_early_init(k))
		return -1;
	return odb_slab_early_init(k);
}

int odb_rooms_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	int ret;

	ret = debug_objects_early_init(k, errbuf, errlen);
	if (ret)
		return ret;
	ret = kasan_init(k, errbuf, errlen);      /* shadow + quarantine before the slab */
	if (ret)
		return ret;
	ret = odb_slab_init(k, errbuf, errlen);
	if (ret)
		return ret;
	return debug_objects_mem_init(k, errbuf, errlen);
}

void odb_rooms_exit(struct odb_kernel *k)
{
	debug_objects_exit(k);
	odb_slab_exit(k);
	kasan_exit(k);                 /* after the slab: its page frees poison the shadow */
}

void slub_cpu_dead(struct odb_kernel *k, unsigned int cpu);
void debug_objects_cpu_offline(struct odb_kernel *k, unsigned int cpu);

/* kasan_cpu_offline is an AP state: it runs on the dying CPU, still online. */
void odb_rooms_cpu_teardown(struct odb_kernel *k, unsigned int cpu)
{
	kasan_cpu_offline(k, cpu);
}

/* The DEAD states, on the control CPU: SLUB's, then debug objects'. */
void odb_rooms_cpu_dead(struct odb_kernel *k, unsigned int cpu)
{
	slub_cpu_dead(k, cpu);
	debug_objects_cpu_offline(k, cpu);
}

void odb_rooms_cpu_online(struct odb_kernel *k, unsigned int cpu)
{
	kasan_cpu_online(k, cpu);
}
