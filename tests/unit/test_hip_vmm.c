// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/hip's pure logic (no GPU, libamdhip64 not loaded):
 * rounding, the listed-code verdict, chunk seeds, version and access names,
 * which file names are code objects, and the kernel argument buffers checked
 * against the metadata of every committed AMDGPU code object (the
 * NT_AMDGPU_METADATA note's msgpack: each argument's .offset and .size), so
 * that a change to gpuconform.cl's kernel signatures without lib/hip fails
 * here, not on a GPU.
 */
#include <dirent.h>
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "gc_hip.h"

#ifndef GPUCONFORM_DATA_DIR
#define GPUCONFORM_DATA_DIR "data"
#endif

static void test_align(void *fx)
{
	(void)fx;
	gc_assert_eq_uint(gc_align_up(0, 4096), 0);
	gc_assert_eq_uint(gc_align_up(1, 4096), 4096);
	gc_assert_eq_uint(gc_align_up(4096, 4096), 4096);
	gc_assert_eq_uint(gc_align_up(4097, 4096), 8192);
	gc_assert_eq_uint(gc_align_up(3 * MiB, 2 * MiB), 4 * MiB);
	gc_assert_eq_uint(gc_align_up(12345, 0), 12345);
}

static void test_listed(void *fx)
{
	static const hipError_t two[] = { hipErrorInvalidValue, hipErrorNotSupported };

	(void)fx;
	gc_assert(gc_hip_listed(hipErrorInvalidValue, two, 2));
	gc_assert(gc_hip_listed(hipErrorNotSupported, two, 2));
	gc_assert(!gc_hip_listed(hipSuccess, two, 2));
	gc_assert(!gc_hip_listed(hipErrorOutOfMemory, two, 2));
	gc_assert(!gc_hip_listed(hipErrorNotSupported, two, 1)); /* only the first n count */
	gc_assert(!gc_hip_listed(hipErrorInvalidValue, two, 0));
	gc_assert(gc_hip_listed(hipErrorInvalidValue, gc_hip_vmm_errors,
				ARRAY_SIZE(gc_hip_vmm_errors)));
	gc_assert(gc_hip_listed(hipErrorNotSupported, gc_hip_vmm_errors,
				ARRAY_SIZE(gc_hip_vmm_errors)));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Chunk 0 keeps the seed; 100,000 chunks (400 TiB of words) get distinct seeds. */
static void test_chunk_seeds(void *fx)
{
	enum { N = 100000 };
	uint32_t *s = malloc(N * sizeof(*s));

	(void)fx;
	gc_assert(s != NULL);
	gc_assert_eq_uint(gc_hip_chunk_seed(0x41d0u, 0), 0x41d0u);
	for (uint64_t c = 0; c < N; c++)
		s[c] = gc_hip_chunk_seed(0x41d0u, c);
	qsort(s, N, sizeof(*s), cmp_u32);
	for (size_t i = 1; i < N; i++)
		gc_assert_f(s[i] != s[i - 1], "two chunks share the seed %#x", s[i]);
	free(s);
	/*
	 * hipModuleLaunchKernel: "Please note, HIP does not support kernel launch
	 * with total work items defined in dimension with size gridDim x blockDim
	 * >= 2^32." [src ROCm/HIP include/hip/hip_runtime_api.h @ rocm-5.2.3]: a
	 * chunk's work-items stay below it.
	 */
	gc_assert_cmpuint(GC_HIP_CHUNK_WORDS, <, (uint64_t)1 << 32);
}

static void test_name_seeds(void *fx)
{
	uint32_t lc = gc_hip_name_seed("lifecycle", NULL, 0);

	(void)fx;
	gc_assert_eq_uint(gc_hip_name_seed("lifecycle", NULL, 0), lc); /* deterministic */
	gc_assert_eq_uint(gc_hip_name_seed("lifecycle", "", 0), lc);   /* NULL: empty */
	gc_assert_eq_uint(gc_hip_name_seed("lifecycle", NULL, 1), lc + 1);
	gc_assert_cmpuint(gc_hip_name_seed("granularity", NULL, 0), !=, lc);
	gc_assert_cmpuint(gc_hip_name_seed("map-past-reservation", "into-free-va", 0), !=,
			  gc_hip_name_seed("map-past-reservation", "into-next-reservation", 0));
	gc_assert_cmpuint(gc_hip_name_seed("ab", "", 0), !=, gc_hip_name_seed("a", "b", 0));
	gc_assert_cmpuint(gc_hip_name_seed(NULL, NULL, 0), !=, lc);
}

static void test_names(void *fx)
{
	char buf[64];

	(void)fx;
	gc_assert_eq_str(gc_hip_version_name(50221153, buf, sizeof(buf)), "5.2.21153");
	gc_assert_eq_str(gc_hip_version_name(60443483, buf, sizeof(buf)), "6.4.43483");
	gc_assert_eq_str(gc_hip_version_name(70000000, buf, sizeof(buf)), "7.0.0");
	gc_assert_eq_str(gc_hip_version_name(61234567, buf, sizeof(buf)), "6.12.34567");
	gc_assert_eq_str(gc_hip_version_name(-1, buf, sizeof(buf)), "unknown");
	gc_assert_eq_str(gc_hip_access_name(hipMemAccessFlagsProtNone), "ProtNone");
	gc_assert_eq_str(gc_hip_access_name(hipMemAccessFlagsProtRead), "ProtRead");
	gc_assert_eq_str(gc_hip_access_name(hipMemAccessFlagsProtReadWrite), "ProtReadWrite");
	gc_assert_eq_str(gc_hip_access_name(~0ull), "?");
	gc_assert_eq_str(gc_hip_access_name(2), "?");
	/* No table loaded: the number, never a crash. */
	gc_assert_eq_str(gc_hip_errstr(NULL, hipErrorInvalidValue, buf, sizeof(buf)),
			 "hipError_t 1");
}

static void test_code_objects(void *fx)
{
	static const char *const names[] = {
		".", "..", "gpuconform.gfx90a.hsaco", "gpuconform.cl", "gpuconform.ptx",
		"gpuconform.gfx1030.hsaco", "gpuconform.hsaco", "other.gfx906.hsaco",
		"gpuconform.gfx906.hsaco.orig", "gpuconform.gfx906.hsaco",
	};
	const char *out[8];
	size_t n;

	(void)fx;
	n = gc_hip_code_objects(names, ARRAY_SIZE(names), out, ARRAY_SIZE(out));
	gc_assert_eq_uint(n, 3);
	gc_assert_eq_str(out[0], "gpuconform.gfx1030.hsaco");
	gc_assert_eq_str(out[1], "gpuconform.gfx906.hsaco");
	gc_assert_eq_str(out[2], "gpuconform.gfx90a.hsaco");
	gc_assert_eq_uint(gc_hip_code_objects(names, ARRAY_SIZE(names), out, 1), 1);
	gc_assert_eq_uint(gc_hip_code_objects(names, 2, out, 8), 0);
}

/* ------------------------------------------- the code objects' metadata */

/* A msgpack reader over [p, end): just what LLVM's AMDGPU metadata uses. */
struct mp {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t mp_be(struct mp *m, int n)
{
	uint64_t v = 0;

	if (m->end - m->p < n) {
		m->bad = true;
		return 0;
	}
	while (n--)
		v = v << 8 | *m->p++;
	return v;
}

enum mp_kind { MP_INT, MP_STR, MP_ARRAY, MP_MAP, MP_OTHER };

/* One item's head: its kind and its value, length or element count. */
static enum mp_kind mp_head(struct mp *m, uint64_t *v)
{
	unsigned b = (unsigned)mp_be(m, 1);

	*v = 0;
	if (b <= 0x7f || b >= 0xe0) { *v = b; return MP_INT; }
	if ((b & 0xe0) == 0xa0) { *v = b & 0x1f; return MP_STR; }
	if ((b & 0xf0) == 0x90) { *v = b & 0x0f; return MP_ARRAY; }
	if ((b & 0xf0) == 0x80) { *v = b & 0x0f; return MP_MAP; }
	switch (b) {
	case 0xcc: case 0xd0: *v = mp_be(m, 1); return MP_INT;
	case 0xcd: case 0xd1: *v = mp_be(m, 2); return MP_INT;
	case 0xce: case 0xd2: *v = mp_be(m, 4); return MP_INT;
	case 0xcf: case 0xd3: *v = mp_be(m, 8); return MP_INT;
	case 0xd9: *v = mp_be(m, 1); return MP_STR;
	case 0xda: *v = mp_be(m, 2); return MP_STR;
	case 0xdc: *v = mp_be(m, 2); return MP_ARRAY;
	case 0xdd: *v = mp_be(m, 4); return MP_ARRAY;
	case 0xde: *v = mp_be(m, 2); return MP_MAP;
	case 0xc0: case 0xc2: case 0xc3: return MP_OTHER;
	default: m->bad = true; return MP_OTHER;
	}
}

static const char *mp_str(struct mp *m, uint64_t len, char *buf, size_t size)
{
	if ((uint64_t)(m->end - m->p) < len) {
		m->bad = true;
		len = 0;
	}
	snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), (const char *)m->p);
	m->p += len;
	return buf;
}

static void mp_skip(struct mp *m)
{
	uint64_t v;
	enum mp_kind k = mp_head(m, &v);

	if (k == MP_STR)
		m->p += (uint64_t)(m->end - m->p) < v ? (uint64_t)(m->end - m->p) : v;
	for (uint64_t i = 0; !m->bad && k >= MP_ARRAY && i < (k == MP_MAP ? 2 * v : v); i++)
		mp_skip(m);
}

/* The key of a map entry, or the empty string when the key is not a string. */
static const char *mp_key(struct mp *m, char *buf, size_t size)
{
	uint64_t v;

	if (mp_head(m, &v) == MP_STR)
		return mp_str(m, v, buf, size);
	buf[0] = '\0';
	return buf;
}

#define MAX_ARGS 8

struct kernel_md {
	char name[64];
	int n_args;
	uint64_t offset[MAX_ARGS], size[MAX_ARGS];
};

static void read_arg(struct mp *m, struct kernel_md *k)
{
	uint64_t n, v;
	char key[32];

	gc_assert(mp_head(m, &n) == MP_MAP && k->n_args < MAX_ARGS);
	for (uint64_t i = 0; i < n && !m->bad; i++) {
		mp_key(m, key, sizeof(key));
		if (!strcmp(key, ".offset") || !strcmp(key, ".size")) {
			gc_assert(mp_head(m, &v) == MP_INT);
			(key[1] == 'o' ? k->offset : k->size)[k->n_args] = v;
		} else {
			mp_skip(m);
		}
	}
	k->n_args++;
}

static void read_kernel(struct mp *m, struct kernel_md *k)
{
	uint64_t n, v;
	char key[32];

	memset(k, 0, sizeof(*k));
	gc_assert(mp_head(m, &n) == MP_MAP);
	for (uint64_t i = 0; i < n && !m->bad; i++) {
		mp_key(m, key, sizeof(key));
		if (!strcmp(key, ".name") && mp_head(m, &v) == MP_STR) {
			mp_str(m, v, k->name, sizeof(k->name));
		} else if (!strcmp(key, ".args")) {
			gc_assert(mp_head(m, &v) == MP_ARRAY);
			for (uint64_t a = 0; a < v && !m->bad; a++)
				read_arg(m, k);
		} else if (strcmp(key, ".name")) {
			mp_skip(m);
		}
	}
}

/* The kernels listed under amdhsa.kernels; how many. */
static int read_kernels(struct mp *m, struct kernel_md *out, int max)
{
	uint64_t n, v;
	char key[32];
	int got = 0;

	gc_assert(mp_head(m, &n) == MP_MAP);
	for (uint64_t i = 0; i < n && !m->bad; i++) {
		if (strcmp(mp_key(m, key, sizeof(key)), "amdhsa.kernels")) {
			mp_skip(m);
			continue;
		}
		gc_assert(mp_head(m, &v) == MP_ARRAY && v <= (uint64_t)max);
		for (uint64_t j = 0; j < v && !m->bad; j++)
			read_kernel(m, &out[got++]);
	}
	gc_assert_f(!m->bad, "malformed msgpack metadata");
	return got;
}

static void *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;

	if (f && fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	*len = n > 0 ? (size_t)n : 0;
	return buf;
}

/* The NT_AMDGPU_METADATA note's descriptor of an ELF64 code object. */
static struct mp metadata_note(const unsigned char *elf, size_t len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;

	gc_assert(len >= sizeof(*eh) && !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
		  eh->e_ident[EI_CLASS] == ELFCLASS64);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(elf + eh->e_phoff) + i;
		size_t at = ph->p_offset, stop = ph->p_offset + ph->p_filesz;

		gc_assert(eh->e_phoff + (i + 1) * sizeof(*ph) <= len && stop <= len);
		while (ph->p_type == PT_NOTE && at + sizeof(Elf64_Nhdr) <= stop) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(elf + at);
			size_t name_at = at + sizeof(*nh);
			size_t desc_at = name_at + (nh->n_namesz + 3) / 4 * 4;

			if (nh->n_type == 32 && nh->n_namesz == 7 &&
			    !memcmp(elf + name_at, "AMDGPU", 7) && desc_at + nh->n_descsz <= stop)
				return (struct mp){ elf + desc_at, elf + desc_at + nh->n_descsz,
						    false };
			at = desc_at + (nh->n_descsz + 3) / 4 * 4;
		}
	}
	gc_fail("no NT_AMDGPU_METADATA note");
}

static const struct kernel_md *find_kernel(const struct kernel_md *k, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(k[i].name, name))
			return &k[i];
	gc_fail("the code object has no kernel %s", name);
}

/* Every argument of k lies in the buffer, where lib/hip put the value given. */
static void expect_args(const struct kernel_md *k, const unsigned char *buf, int n_args,
			const uint64_t *values)
{
	gc_assert_f(k->n_args == n_args, "%s has %d arguments, lib/hip packs %d", k->name,
		    k->n_args, n_args);
	for (int i = 0; i < n_args; i++) {
		uint64_t got = 0;

		gc_assert_f(k->offset[i] + k->size[i] <= GC_HIP_KERNARG_BYTES && k->size[i] <= 8,
			    "%s argument %d: offset %" PRIu64 " size %" PRIu64, k->name, i,
			    k->offset[i], k->size[i]);
		memcpy(&got, buf + k->offset[i], k->size[i]);
		gc_assert_f(got == values[i], "%s argument %d (offset %" PRIu64 ", size %" PRIu64
			    "): lib/hip put %#" PRIx64 " there, want %#" PRIx64, k->name, i,
			    k->offset[i], k->size[i], got, values[i]);
	}
}

static void check_code_object(const char *path)
{
	unsigned char buf[GC_HIP_KERNARG_BYTES];
	struct kernel_md k[8];
	size_t len;
	unsigned char *elf = read_whole(path, &len);
	struct mp m;
	int n;
	uint64_t fill[] = { 0x1122334455667788ull, 0x0102030405060708ull, 0xa5a5a5a5u };
	uint64_t check[] = { 0x1122334455667788ull, 0x0102030405060708ull, 0xa5a5a5a5u,
			     0x8877665544332211ull };

	gc_assert_f(elf != NULL, "%s: cannot read it", path);
	m = metadata_note(elf, len);
	n = read_kernels(&m, k, ARRAY_SIZE(k));
	gc_hip_fill_args(buf, (void *)(uintptr_t)fill[0], fill[1], (uint32_t)fill[2]);
	expect_args(find_kernel(k, n, "gc_fill_u32"), buf, 3, fill);
	gc_hip_check_args(buf, (const void *)(uintptr_t)check[0], check[1], (uint32_t)check[2],
			  (void *)(uintptr_t)check[3]);
	expect_args(find_kernel(k, n, "gc_check_u32"), buf, 4, check);
	free(elf);
	gc_info("%s: gc_fill_u32 and gc_check_u32 arguments where lib/hip puts them", path);
}

/* Every committed code object, as gc_hip_kernels_load() would find them. */
static void test_kernel_args(void *fx)
{
	char dir[2048], path[4096], *names[64];
	const char *objects[64];
	size_t n = 0, n_objects;
	struct dirent *ent;
	DIR *d;

	(void)fx;
	snprintf(dir, sizeof(dir), "%s/kernels", GPUCONFORM_DATA_DIR);
	d = opendir(dir);
	gc_assert_f(d != NULL, "%s: cannot list it", dir);
	while ((ent = readdir(d)) && n < ARRAY_SIZE(names))
		if ((names[n] = strdup(ent->d_name)))
			n++;
	closedir(d);
	n_objects = gc_hip_code_objects((const char *const *)names, n, objects,
					ARRAY_SIZE(objects));
	gc_assert_f(n_objects >= 1, "%s holds no gpuconform.<gfx>.hsaco", dir);
	for (size_t i = 0; i < n_objects; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, objects[i]);
		check_code_object(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
}

static const struct gc_subtest subtests[] = {
	{ "align", test_align, "rounding up to a granularity" },
	{ "listed", test_listed, "a code is one of the codes a header lists" },
	{ "chunk-seeds", test_chunk_seeds, "every chunk of a fill has a seed of its own" },
	{ "name-seeds", test_name_seeds, "pattern seeds from subtest names" },
	{ "names", test_names, "version, access flag and error names" },
	{ "code-objects", test_code_objects, "which files are code objects, in which order" },
	{ "kernel-args", test_kernel_args,
	  "the argument buffers match every committed code object's metadata" },
	{ 0 }
};

GC_MAIN(.name = "unit_hip_vmm", .description = "lib/hip pure logic", .subtests = subtests)
