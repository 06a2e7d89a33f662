/*
 * The memory layout of each kernel: where its direct map (the RAM arena) and
 * its vmalloc space sit among kernel virtual addresses -- x86-64's
 * page_offset_base and vmalloc_base, which arch/x86/mm/kaslr.c
 * (kernel_randomize_memory) moves at boot by a random number of PUD-sized
 * (1 GiB) steps inside their regions.
 *
 * odebug derives both from the boot seed (odb_config.seed), so a layout is the
 * same in every run and every process for the same seed:
 *
 *   slot = mix(seed) mod (slots of the region that fit the range)
 *   base = region start + slot * 1 GiB
 *
 * mix() is a bijective 64-bit finaliser with mix(0) = 0, so seed 0 (the
 * default) gives the nokaslr layout: the direct map at 0xffff888000000000
 * (ODB_PAGE_OFFSET) and vmalloc space at 0xffffc90000000000
 * (ODB_VMALLOC_START), as a kernel booted with nokaslr has them; outputs made
 * before per-kernel bases existed stay as they were.  The vmalloc slot mixes
 * seed * an odd constant, another bijection fixing 0.  `nokaslr` on the
 * command line forces the nokaslr layout whatever the seed.
 * (Deviation: the kernel draws the regions in order, each after the previous
 * one with a random gap; odebug draws each in its own region.)
 *
 * Kernels live side by side in one process, and an address of kernel A passed
 * to kernel B must never be one of B's objects: no two live kernels' direct
 * maps [base, base + ram) or vmalloc regions overlap.  A layout whose slot
 * overlaps a live kernel's takes the next slot up (wrapping), the first one
 * that is free: deterministic for a given set of live kernels (two kernels of
 * one seed alive at once get consecutive slots).
 *
 * The registry of live layouts below is the one piece of process-global
 * mutable state of the core (the rule is "everything hangs off struct
 * odb_kernel"): disjointness is a property of all kernels of the process
 * together, which no single kernel can know.  It is a list of the live
 * kernels themselves (their kaslr_node) under one mutex, touched only at boot,
 * close and destroy; nothing else reads it.
 */
#include <stdio.h>

#include "kernel/kernel.h"

/* x86-64 with 4-level paging (Documentation/arch/x86/x86_64/mm.rst). */
#define DIRECT_MAP_SIZE  (64ULL << 40)        /* 1 << MAX_PHYSMEM_BITS (46) */
#define VMALLOC_REGION   (32ULL << 40)        /* VMALLOC_SIZE_TB = 32 */
#define KASLR_ALIGN      (1ULL << 30)         /* PUD_SIZE */

static pthread_mutex_t kaslr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head kaslr_live = LIST_HEAD_INIT(kaslr_live);   /* under kaslr_lock */
/* Every kernel from its layout to its destroy (closed ones too), for fork():
 * under kaslr_lock as well. */
static struct list_head kernels_alive = LIST_HEAD_INIT(kernels_alive);
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/*
 * fork().  RAM is a shared mapping (vmalloc space aliases its pages), so a
 * forked child sees the very memory its parent's kernels live in: if the
 * child went on using an inherited kernel, or merely tore one down (its
 * exit paths free quarantined objects, write freelists), it would corrupt the
 * parent's kernel behind its back.  In the child every inherited kernel is
 * therefore closed (each call: ODB_ECLOSED) and marked forked, so that its
 * destroy only unmaps the child's view of its memory, touching nothing.
 * The registry lock is held across fork (prepare / parent / child), so the
 * child walks a consistent list.  A kernel belongs to the process that
 * booted it (deliberate deviation from the private mapping's copy-on-write,
 * with which a child used to get a copy of the kernel).
 */
static void atfork_prepare(void) { pthread_mutex_lock(&kaslr_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&kaslr_lock); }
static void atfork_child(void)
{
	struct list_head *pos;

	for (pos = kernels_alive.next; pos != &kernels_alive; pos = pos->next) {
		struct odb_kernel *o = list_entry(pos, struct odb_kernel, alive_node);

		o->forked = true;
		atomic_store(&o->api_fast, false);
		atomic_store(&o->closed, true);
	}
	pthread_mutex_unlock(&kaslr_lock);
}

static void install_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* A bijection of 64-bit values with mix(0) == 0 (xor-shift / multiply rounds). */
static uint64_t kaslr_mix(uint64_t x)
{
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 29;
	x *= 0xa9f3c8e1b5d2c487ULL;
	x ^= x >> 32;
	return x;
}

static bool overlaps(odb_addr_t a, uint64_t alen, odb_addr_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Is [start, start + len) free of every live kernel's range of that kind? */
static bool slot_free(odb_addr_t start, uint64_t len, bool vmalloc)
{
	struct list_head *pos;

	for (pos = kaslr_live.next; pos != &kaslr_live; pos = pos->next) {
		const struct odb_kernel *o = list_entry(pos, struct odb_kernel, kaslr_node);

		if (vmalloc ? overlaps(start, len, o->vmalloc_start, o->vmalloc_size)
			    : overlaps(start, len, o->page_offset_base, o->ram_bytes))
			return false;
	}
	return true;
}

/* The first free slot from the seed's, or false. */
static bool pick_slot(uint64_t mixed, odb_addr_t region, uint64_t region_size, uint64_t len,
		      bool vmalloc, odb_addr_t *out)
{
	uint64_t span = ALIGN(len, KASLR_ALIGN), nslots, first;

	if (span > region_size)
		return false;
	nslots = (region_size - span) / KASLR_ALIGN + 1;
	first = mixed % nslots;
	for (uint64_t i = 0; i < nslots; i++) {
		odb_addr_t start = region + ((first + i) % nslots) * KASLR_ALIGN;

		if (slot_free(start, len, vmalloc)) {
			*out = start;
			return true;
		}
	}
	return false;
}

int kernel_randomize_memory(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	uint64_t seed = k->nokaslr ? 0 : k->seed;
	int ret = 0;

	pthread_once(&atfork_once, install_atfork);
	pthread_mutex_lock(&kaslr_lock);
	if (!pick_slot(kaslr_mix(seed), ODB_PAGE_OFFSET, DIRECT_MAP_SIZE, k->ram_bytes, false,
		       &k->page_offset_base)) {
		snprintf(errbuf, errlen, "ram: no free %llu-byte slot left in the direct-map region "
			 "(too many live kernels)", (unsigned long long)k->ram_bytes);
		ret = -1;
	} else if (!pick_slot(kaslr_mix(seed * 0x9e3779b97f4a7c15ULL), ODB_VMALLOC_START,
			      VMALLOC_REGION, k->vmalloc_size, true, &k->vmalloc_start)) {
		snprintf(errbuf, errlen, "no free slot left in the vmalloc region (too many live kernels)");
		ret = -1;
	} else {
		list_add_tail(&k->kaslr_node, &kaslr_live);
		k->kaslr_live = true;
		list_add_tail(&k->alive_node, &kernels_alive);
		k->alive = true;
	}
	pthread_mutex_unlock(&kaslr_lock);
	return ret;
}

void kaslr_release(struct odb_kernel *k)
{
	pthread_mutex_lock(&kaslr_lock);
	if (k->kaslr_live) {
		list_del(&k->kaslr_node);
		k->kaslr_live = false;
	}
	pthread_mutex_unlock(&kaslr_lock);
}

void kaslr_forget(struct odb_kernel *k)
{
	pthread_mutex_lock(&kaslr_lock);
	if (k->kaslr_live) {
		list_del(&k->kaslr_node);
		k->kaslr_live = false;
	}
	if (k->alive) {
		list_del(&k->alive_node);
		k->alive = false;
	}
	pthread_mutex_unlock(&kaslr_lock);
}

/* nokaslr: the layout of a kernel booted without memory randomisation. */
int kaslr_param_nokaslr(struct odb_kernel *k, const char *val)
{
	if (val)
		return odb_err(k, ODB_EINVAL, "nokaslr: takes no value (`%s')", val);
	k->nokaslr = true;
	return 0;
}

void kaslr_param_nokaslr_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%d", k->nokaslr ? 1 : 0);
}
