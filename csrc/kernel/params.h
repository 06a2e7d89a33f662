/* Parameter helpers and the rooms' parameter lists (ODB_ROOM_PARAMS). */
#ifndef ODB_KERNEL_PARAMS_H
#define ODB_KERNEL_PARAMS_H

#include <stdbool.h>

int odb_kstrtoul(const char *s, unsigned long *out);
int odb_kstrtobool(const char *s, bool *out);
struct odb_kernel;
/* A parameter taking one of choices[] (NULL-terminated): *out gets its index,
 * or ODB_EINVAL names the parameter and the choices. */
int odb_param_choice(struct odb_kernel *k, const char *name, const char *val,
		     const char *const choices[], int *out);

/* Each room appends its entries here as it arrives, e.g.
 *   { "slub_debug", slub_debug_setup, slub_debug_show },               */
#include "debugobjects/debugobjects.h"
#define ODB_DEBUGOBJECTS_PARAMS \
	{ "debug_objects", debug_objects_param_enable, debug_objects_param_enable_get }, \
	{ "no_debug_objects", debug_objects_param_disable, debug_objects_param_disable_get }, \
	{ "odebug.objects_free", debug_objects_param_free, debug_objects_param_free_get }, \
	{ "odebug.objects_warn", debug_objects_param_warn, debug_objects_param_warn_get }, \
	{ "odebug.objects_selftest", debug_objects_param_selftest, debug_objects_param_selftest_get }, \
	{ "odebug.objects_fixes", debug_objects_param_fixes, debug_objects_param_fixes_get },
struct odb_kernel;
int odb_slub_debug_param(struct odb_kernel *k, const char *val);
void odb_slub_debug_show(struct odb_kernel *k, char *buf, size_t len);
int odb_slub_path_param(struct odb_kernel *k, const char *val);
void odb_slub_path_show(struct odb_kernel *k, char *buf, size_t len);
int odb_slub_rcu_debug_param(struct odb_kernel *k, const char *val);
void odb_slub_rcu_debug_show(struct odb_kernel *k, char *buf, size_t len);
#define ODB_SLAB_PARAMS \
	{ "slub_debug", odb_slub_debug_param, odb_slub_debug_show }, \
	{ "slab_debug", odb_slub_debug_param, odb_slub_debug_show }, \
	{ "odebug.slub_path", odb_slub_path_param, odb_slub_path_show }, \
	{ "odebug.slub_rcu_debug", odb_slub_rcu_debug_param, odb_slub_rcu_debug_show },
int kasan_param_on(struct odb_kernel *k, const char *val);
void kasan_param_on_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_fault(struct odb_kernel *k, const char *val);
void kasan_param_fault_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_multi_shot(struct odb_kernel *k, const char *val);
void kasan_param_multi_shot_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_quarantine(struct odb_kernel *k, const char *val);
void kasan_param_quarantine_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_quarantine_fixes(struct odb_kernel *k, const char *val);
void kasan_param_quarantine_fixes_show(struct odb_kernel *k, char *buf, size_t len);
#define ODB_KASAN_PARAMS \
	{ "kasan", kasan_param_on, kasan_param_on_show }, \
	{ "kasan.fault", kasan_param_fault, kasan_param_fault_show }, \
	{ "kasan_multi_shot", kasan_param_multi_shot, kasan_param_multi_shot_show }, \
	{ "odebug.quarantine", kasan_param_quarantine, kasan_param_quarantine_show }, \
	{ "odebug.quarantine_fixes", kasan_param_quarantine_fixes, kasan_param_quarantine_fixes_show },
#define ODB_ROOM_PARAMS ODB_SLAB_PARAMS ODB_DEBUGOBJECTS_PARAMS ODB_KASAN_PARAMS

#endif
