/*
 * The rooms' boot and shutdown hooks, called by odb_kernel_create/destroy in
 * the kernel's initcall order.  Each room adds its init/exit here.
 */
#ifndef ODB_KERNEL_ROOMS_H
#define ODB_KERNEL_ROOMS_H

struct odb_kernel;
int odb_rooms_early_init(struct odb_kernel *k);
int odb_rooms_init(struct odb_kernel *k, char *errbuf, size_t errlen);
void odb_rooms_exit(struct odb_kernel *k);
/* CPU hotplug callbacks of every room: the dying vCPU's teardown (while it
 * is still online), the DEAD states (after it left the mask), coming up. */
void odb_rooms_cpu_teardown(struct odb_kernel *k, unsigned int cpu);
void odb_rooms_cpu_dead(struct odb_kernel *k, unsigned int cpu);
void odb_rooms_cpu_online(struct odb_kernel *k, unsigned int cpu);

#endif
