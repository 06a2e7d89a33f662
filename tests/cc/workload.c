/* A kernel-style C workload with planted bugs, built by tests/test_cc.py with
 * odebug.cc's flags (python -m odebug cc -- gcc -shared ...).  Written for
 * odebug's tests.  Every function runs on the calling thread's current kernel
 * (odb_cc_enter), except cc_read_at, which is given one. */
#include <stdlib.h>
#include <odebug/kernel_compat.h>

#define NOINLINE __attribute__((noinline))

struct widget {
	int id;
	char name[20];
};

int cc_table[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
volatile int cc_sink;

NOINLINE int cc_slab_oob(void)
{
	char *p = kmalloc(13, GFP_KERNEL);
	int v;

	if (!p)
		return -1;
	p[0] = 1;
	v = p[13];                      /* one past the end */
	kfree(p);
	return v;
}

NOINLINE int cc_slab_uaf(void)
{
	struct widget *w = kzalloc(sizeof(*w), GFP_KERNEL);
	int v;

	if (!w)
		return -1;
	w->id = 7;
	kfree(w);
	v = w->id;                      /* after kfree */
	return v;
}

NOINLINE int cc_global_oob(int i)
{
	return cc_table[i];             /* i == 10: past the array */
}

NOINLINE int cc_cache_uaf(void)
{
	struct kmem_cache *s = kmem_cache_create("cc_widget", sizeof(struct widget), 0, 0, NULL);
	struct widget *w;
	int v = -1;

	if (!s)
		return -1;
	w = kmem_cache_alloc(s, GFP_KERNEL);
	if (w) {
		w->id = 3;
		kmem_cache_free(s, w);
		v = w->name[2];         /* after kmem_cache_free */
	}
	kmem_cache_destroy(s);
	return v;
}

/* no bug: host heap, stack, an in-bounds global and a whole kmalloc object */
NOINLINE int cc_host_ok(void)
{
	int *h = malloc(16 * sizeof(int));
	int stack[8], sum = 0;
	char *p = kmalloc(24, GFP_KERNEL);

	if (!h || !p) {
		free(h);
		kfree(p);
		return -1;
	}
	for (int i = 0; i < 16; i++)
		h[i] = i;
	for (int i = 0; i < 8; i++)
		stack[i] = h[i] + cc_table[i];
	for (int i = 0; i < 8; i++)
		sum += stack[i];
	memset(p, 1, 24);
	for (size_t i = 0; i < ksize(p) && i < 24; i++)
		sum += p[i];
	cc_sink = cc_table[9];
	free(h);
	kfree(p);
	return sum;
}

NOINLINE int cc_memcpy_oob(void)
{
	char *dst = kmalloc(16, GFP_KERNEL), *src = kmalloc(32, GFP_KERNEL);

	if (!dst || !src)
		return -1;
	memset(src, 'x', 32);
	memcpy(dst, src, 20);           /* 4 bytes past dst */
	kfree(dst);
	kfree(src);
	return 0;
}

NOINLINE int cc_memset_oob(void)
{
	char *p = kmalloc(40, GFP_KERNEL);

	if (!p)
		return -1;
	memset(p + 32, 0, 16);          /* 8 bytes past the end */
	kfree(p);
	return 0;
}

/* vmalloc_oob of the kernel's KASAN tests: vmalloc(PAGE_SIZE / 2 - 8 - 5)
 * (2035 bytes), then a read of byte 2035 (the partial granule) and of byte
 * 2040 (the next granule): two vmalloc-out-of-bounds reports */
NOINLINE int cc_vmalloc_oob(void)
{
	size_t size = 4096 / 2 - 8 - 5;
	char *v = vmalloc(size);
	int r;

	if (!v)
		return -1;
	memset(v, 'v', size);
	r = ((volatile char *)v)[size];
	r += ((volatile char *)v)[size + 5];
	vfree(v);
	return r;
}

/* a big kvmalloc (past KMALLOC_MAX_SIZE: vmalloc space), written whole, then
 * read after kvfree: one vmalloc-out-of-bounds */
NOINLINE int cc_kvmalloc_uaf(void)
{
	size_t size = 5 << 20;
	int *p = kvmalloc(size, GFP_KERNEL);
	int r;

	if (!p)
		return -1;
	memset(p, 0, size);
	p[1000] = 42;
	r = p[1000];
	kvfree(p);
	return r + ((volatile int *)p)[1000];
}

/* a mempool element read after mempool_free put it back into the reserve
 * (KASAN poisons it there); the page pool's element the same; nothing is
 * reported inside kasan_disable_current() */
NOINLINE int cc_mempool_uaf(void)
{
	mempool_t pool, *pages;
	struct page *pg;
	char *e;
	int v;

	if (mempool_init_kmalloc_pool(&pool, 2, 48))
		return -1;
	e = mempool_alloc_preallocated(&pool);
	if (!e) {
		mempool_exit(&pool);
		return -1;
	}
	e[0] = 5;
	mempool_free(e, &pool);
	kasan_disable_current();
	v = e[2];                       /* silent */
	kasan_enable_current();
	v += e[1];                      /* slab-use-after-free */
	mempool_exit(&pool);
	pages = mempool_create_page_pool(1, 0);
	if (!pages)
		return -1;
	pg = mempool_alloc(pages, GFP_KERNEL);
	if (pg) {
		((char *)page_address(pg))[0] = 1;
		mempool_free(pg, pages);   /* the reserve is full: back to the page allocator */
	}
	mempool_destroy(pages);
	return v;
}

/* the byte at arena address a of kernel k, read through the host pointer */
NOINLINE int cc_read_at(odb_kernel *k, odb_addr_t a)
{
	volatile char *p = odb_host_ptr(k, a, 1);

	return p ? p[0] : -1;
}
