/* Parameter helpers and the rooms' parameter lists (ODB_ROOM_PARAMS). */
#ifndef ODB_KERNEL_PARAMS_H
#define ODB_KERNEL_PARAMS_H

#include <stdbool.h>

int odb_kstrtoul(const char *s, unsigned long *out);
int odb_kstrtobool(const char *s, bool *out);

/* Each room appends its entries here as it arrives, e.g.
 *   { "slub_debug", slub_debug_setup, slub_debug_show },               */
#define ODB_ROOM_PARAMS

#endif
