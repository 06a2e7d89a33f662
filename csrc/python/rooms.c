/* The rooms' binding hooks, called from the module's exec slot in order. */
#include "python/binding.h"

int odb_py_slab_init(PyObject *module, core_state *st);           /* python/slab.c */
int odb_py_debugobjects_init(PyObject *module, core_state *st);   /* python/debugobjects.c */
int odb_py_kasan_init(PyObject *module, core_state *st);          /* python/kasan.c */
int odb_py_sched_init(PyObject *module, core_state *st);          /* python/sched.c */
int odb_py_vmalloc_init(PyObject *module, core_state *st);        /* python/vmalloc.c */
int odb_py_mempool_init(PyObject *module, core_state *st);        /* python/mempool.c */

const odb_py_room_init odb_py_rooms[] = {
	odb_py_slab_init,
	odb_py_debugobjects_init,
	odb_py_kasan_init,
	odb_py_sched_init,
	odb_py_vmalloc_init,
	odb_py_mempool_init,
	NULL,
};
