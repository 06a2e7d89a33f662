/*
 * Shared between the files of libodebug_kasan_rt.so (csrc/cc/): the access
 * check every callback and kernel_compat.h helper goes through.  Built with
 * -fvisibility=hidden: only RT_API names are exported.
 */
#ifndef ODB_CC_RT_H
#define ODB_CC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <odebug/odebug.h>

#define RT_API __attribute__((visibility("default")))
#define RET_IP ((unsigned long)__builtin_return_address(0))

/* An access of [p, p+n) by the instrumented code at ip: inside a registered
 * arena that kernel's KASAN checks it, inside a registered global or the
 * calling thread's stack the runtime's shadow does; true if it was good
 * (a bad one has been reported, or counted when no kernel can report it). */
bool odb_rt_check(const void *p, size_t n, bool write, unsigned long ip);

/* The calling thread's current kernel (odb_cc_enter), else NULL. */
odb_kernel *odb_cc_current(void);

#endif
