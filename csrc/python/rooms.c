/* The rooms' binding hooks, called from the module's exec slot in order. */
#include "python/binding.h"

const odb_py_room_init odb_py_rooms[] = {
	NULL,
};
