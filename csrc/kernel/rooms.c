/* Boot order of the rooms (mm_init / kmem_cache_init / kasan_init /
 * debug_objects_mem_init).  Rooms are added by later subsystems. */
#include "kernel/kernel.h"
#include "kernel/rooms.h"

int odb_rooms_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	(void)k; (void)errbuf; (void)errlen;
	return 0;
}

void odb_rooms_exit(struct odb_kernel *k)
{
	(void)k;
}
