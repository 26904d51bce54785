// SPDX-License-Identifier: MIT
/*
 * KFD sysfs topology parser. Pure file reading and parsing: no AMD header,
 * so it is built and unit-tested everywhere (tests/unit/test_kfd_topology.c).
 *
 * Format, per the kernel's kfd_topology.c (read, not run): every property
 * file holds `name value\n` lines printed with sysfs_show_32bit_prop /
 * sysfs_show_64bit_prop (unsigned decimal); nodes/N/gpu_id holds one number.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "kfd_topology.h"

#define PROP_FILE_MAX 8192 /* a node's properties are ~1.5 KiB */

void gc_kfd_why(char *why, size_t len, const char *fmt, ...)
{
	if (!why || !len)
		return;
	GC_VFORMAT(why, len, fmt);
}

static int path_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* snprintf that reports truncation: 0 or -ENAMETOOLONG. */
static int path_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Whole file into buf (NUL-terminated); 0 or -errno, -EFBIG when it does not fit. */
static int read_text(const char *path, char *buf, size_t len)
{
	size_t used = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf + used, len - 1 - used);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used == len - 1) {
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	buf[used] = '\0';
	return err;
}

static int parse_u64(const char *s, size_t n, uint64_t *val)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*val = v;
	return 0;
}

/* One `key value` line [line, end): key and value spans, or -EINVAL. */
static int split_line(const char *line, const char *end, const char **k, size_t *klen,
		      const char **v, size_t *vlen)
{
	const char *sp = memchr(line, ' ', (size_t)(end - line));

	if (!sp || sp == line || sp + 1 >= end)
		return -EINVAL;
	*k = line;
	*klen = (size_t)(sp - line);
	*v = sp + 1;
	*vlen = (size_t)(end - sp - 1);
	return 0;
}

int gc_kfd_prop_get(const char *text, const char *key, uint64_t *val)
{
	size_t keylen = strlen(key);
	const char *line = text;
	int found = -ENOENT;

	while (*line) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);
		const char *k, *v;
		size_t klen, vlen;

		if (end > line) {
			if (split_line(line, end, &k, &klen, &v, &vlen))
				return -EINVAL;
			if (klen == keylen && !memcmp(k, key, keylen)) {
				if (parse_u64(v, vlen, val))
					return -EINVAL;
				found = 0;
			}
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return found;
}

/* A whole file holding one number (`43127\n`). */
static int read_number(const char *path, uint64_t *val)
{
	char buf[64];
	size_t n;
	int err = read_text(path, buf, sizeof(buf));

	if (err)
		return err;
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		n--;
	return parse_u64(buf, n, val);
}

struct prop_want {
	const char *key;
	bool required;
	uint64_t val;
};

/* Every wanted key of the file at path; a missing required key is -EINVAL. */
static int read_props(const char *path, struct prop_want *want, size_t n, char *why,
		      size_t why_len)
{
	char *text = malloc(PROP_FILE_MAX);
	size_t i;
	int err;

	if (!text)
		return -ENOMEM;
	err = read_text(path, text, PROP_FILE_MAX);
	if (err) {
		gc_kfd_why(why, why_len, "%s: %s", path, strerror(-err));
		goto out;
	}
	for (i = 0; i < n; i++) {
		err = gc_kfd_prop_get(text, want[i].key, &want[i].val);
		if (err == -ENOENT && !want[i].required) {
			want[i].val = 0;
			err = 0;
			continue;
		}
		if (err == -ENOENT)
			gc_kfd_why(why, why_len, "%s: no \"%s\" line", path, want[i].key);
		else if (err)
			gc_kfd_why(why, why_len, "%s: malformed (want \"name value\" lines with "
				"unsigned decimal values)", path);
		if (err) {
			err = -EINVAL;
			goto out;
		}
	}
out:
	free(text);
	return err;
}

enum bank_key { BK_HEAP, BK_SIZE, BK_FLAGS, BK_WIDTH, BK_CLK, BK_N };

static int read_bank(const char *node_dir, unsigned m, struct gc_kfd_bank *b, char *why,
		     size_t why_len)
{
	struct prop_want want[BK_N] = {
		[BK_HEAP] = { "heap_type", true, 0 },
		[BK_SIZE] = { "size_in_bytes", true, 0 },
		[BK_FLAGS] = { "flags", false, 0 },
		[BK_WIDTH] = { "width", false, 0 },
		[BK_CLK] = { "mem_clk_max", false, 0 },
	};
	char path[4096];
	int err = path_fmt(path, sizeof(path), "%s/mem_banks/%u/properties", node_dir, m);

	if (err)
		return err;
	err = read_props(path, want, BK_N, why, why_len);
	if (err)
		return err;
	b->heap_type = (uint32_t)want[BK_HEAP].val;
	b->size_in_bytes = want[BK_SIZE].val;
	b->flags = (uint32_t)want[BK_FLAGS].val;
	b->width = (uint32_t)want[BK_WIDTH].val;
	b->mem_clk_max = (uint32_t)want[BK_CLK].val;
	return 0;
}

enum node_key {
	NK_CPU, NK_SIMD, NK_BANKS, NK_RENDER, NK_VENDOR, NK_DEVICE, NK_LOCATION, NK_DOMAIN,
	NK_GFX, NK_CAP, NK_N
};

static int read_node_props(const char *node_dir, struct gc_kfd_node *node, char *why,
			   size_t why_len)
{
	struct prop_want want[NK_N] = {
		[NK_CPU] = { "cpu_cores_count", true, 0 },
		[NK_SIMD] = { "simd_count", true, 0 },
		[NK_BANKS] = { "mem_banks_count", true, 0 },
		[NK_RENDER] = { "drm_render_minor", node->gpu_id != 0, 0 },
		[NK_VENDOR] = { "vendor_id", false, 0 },
		[NK_DEVICE] = { "device_id", false, 0 },
		[NK_LOCATION] = { "location_id", false, 0 },
		[NK_DOMAIN] = { "domain", false, 0 },
		[NK_GFX] = { "gfx_target_version", false, 0 },
		[NK_CAP] = { "capability", false, 0 },
	};
	char path[4096];
	int err = path_fmt(path, sizeof(path), "%s/properties", node_dir);

	if (err)
		return err;
	err = read_props(path, want, NK_N, why, why_len);
	if (err)
		return err;
	node->cpu_cores_count = (uint32_t)want[NK_CPU].val;
	node->simd_count = (uint32_t)want[NK_SIMD].val;
	node->drm_render_minor = node->gpu_id ? (int32_t)(uint32_t)want[NK_RENDER].val : -1;
	node->vendor_id = (uint32_t)want[NK_VENDOR].val;
	node->device_id = (uint32_t)want[NK_DEVICE].val;
	node->location_id = (uint32_t)want[NK_LOCATION].val;
	node->domain = (uint32_t)want[NK_DOMAIN].val;
	node->gfx_target_version = (uint32_t)want[NK_GFX].val;
	node->capability = (uint32_t)want[NK_CAP].val;
	if (want[NK_BANKS].val > GC_KFD_MAX_BANKS) {
		gc_kfd_why(why, why_len, "%s: mem_banks_count %" PRIu64 " (at most %d supported)",
			path, want[NK_BANKS].val, GC_KFD_MAX_BANKS);
		return -E2BIG;
	}
	node->n_banks = (unsigned)want[NK_BANKS].val;
	return 0;
}

/* 0, 1 when the node directory does not exist (end of list), or -errno. */
static int read_node(const char *root, unsigned n, struct gc_kfd_topology *t, char *why,
		     size_t why_len)
{
	struct gc_kfd_node *node = &t->nodes[t->n_nodes];
	char dir[4096], path[4096];
	uint64_t gpu_id;
	unsigned m;
	int err = path_fmt(dir, sizeof(dir), "%s/nodes/%u", root, n);

	if (!err)
		err = path_fmt(path, sizeof(path), "%s/gpu_id", dir);
	if (err) {
		gc_kfd_why(why, why_len, "%s: path too long", root);
		return err;
	}
	err = read_number(path, &gpu_id);
	if (err == -ENOENT && access(dir, F_OK) != 0)
		return 1;
	if (err == -EPERM) {
		t->n_denied++;
		return 0;
	}
	if (err) {
		gc_kfd_why(why, why_len, "%s: %s", path,
			err == -EINVAL ? "not a decimal number" : strerror(-err));
		return err;
	}
	if (gpu_id > UINT32_MAX) {
		gc_kfd_why(why, why_len, "%s: %" PRIu64 " does not fit 32 bits", path, gpu_id);
		return -EINVAL;
	}
	if (t->n_nodes == GC_KFD_MAX_NODES) {
		gc_kfd_why(why, why_len, "%s: more than %d nodes", root, GC_KFD_MAX_NODES);
		return -E2BIG;
	}
	memset(node, 0, sizeof(*node));
	node->node_id = n;
	node->gpu_id = (uint32_t)gpu_id;
	err = read_node_props(dir, node, why, why_len);
	for (m = 0; !err && m < node->n_banks; m++)
		err = read_bank(dir, m, &node->banks[m], why, why_len);
	if (err)
		return err;
	t->n_nodes++;
	if (node->gpu_id)
		t->n_gpus++;
	return 0;
}

static int read_generation(const char *root, uint64_t *gen, char *why, size_t why_len)
{
	char path[4096];
	int err = path_fmt(path, sizeof(path), "%s/generation_id", root);

	if (err) {
		gc_kfd_why(why, why_len, "%s: path too long", root);
		return err;
	}
	err = read_number(path, gen);
	if (err)
		gc_kfd_why(why, why_len, "%s: %s", path,
			err == -EINVAL ? "not a decimal number" : strerror(-err));
	return err;
}

int gc_kfd_topology_read(const char *root, struct gc_kfd_topology *t, char *why,
			 size_t why_len)
{
	uint64_t gen_after;
	unsigned n;
	int err;

	memset(t, 0, sizeof(*t));
	err = read_generation(root, &t->generation_id, why, why_len);
	if (err)
		return err;
	for (n = 0;; n++) {
		err = read_node(root, n, t, why, why_len);
		if (err < 0)
			return err;
		if (err == 1)
			break;
	}
	err = read_generation(root, &gen_after, why, why_len);
	if (err)
		return err;
	if (gen_after != t->generation_id) {
		gc_kfd_why(why, why_len, "%s: generation_id changed from %" PRIu64 " to %" PRIu64
			" while reading (topology changed)", root, t->generation_id, gen_after);
		return -EAGAIN;
	}
	return 0;
}

const struct gc_kfd_node *gc_kfd_topology_find(const struct gc_kfd_topology *t,
					       uint32_t gpu_id)
{
	unsigned i;

	if (gpu_id == 0)
		return NULL;
	for (i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].gpu_id == gpu_id)
			return &t->nodes[i];
	return NULL;
}

uint64_t gc_kfd_node_heap_bytes(const struct gc_kfd_node *n, uint32_t heap_type)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < n->n_banks; i++)
		if (n->banks[i].heap_type == heap_type)
			sum += n->banks[i].size_in_bytes;
	return sum;
}

uint64_t gc_kfd_node_vram_bytes(const struct gc_kfd_node *n)
{
	return gc_kfd_node_heap_bytes(n, GC_KFD_HEAP_FB_PUBLIC) +
	       gc_kfd_node_heap_bytes(n, GC_KFD_HEAP_FB_PRIVATE);
}
