// SPDX-License-Identifier: MIT
/* hipfile_io's environment, held resources and checks: see hf_util.h. */
#include "hf_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interrupt.h"

/* ------------------------------------------------------------ fixture */

static bool have_any(const struct hf_env *e)
{
	for (int x = 0; x < GC_HF_N_ENTRIES; x++)
		if (hf_have(e, (enum gc_hf_entry)x))
			return true;
	return false;
}

static const char *none_why(const struct hf_env *e, char *why, size_t len)
{
	char v[32];

	snprintf(why, len, "no AMD fastpath entry point in HIP runtime %s (%s): no %s, no %s, "
		 "no %s (each one's reason is printed above)",
		 gc_hip_version_name(e->h.hip->runtime_version, v, sizeof(v)), e->h.hip->soname,
		 e->h.backend[GC_HF_HIPFILE].missing, e->h.backend[GC_HF_HIP_AMD_FILE].missing,
		 e->h.backend[GC_HF_HSA_AIS].missing);
	return why;
}

static void env_free(struct hf_env *e)
{
	if (e->dev)
		e->h.hip->hipFree(e->dev);
	if (e->h.hip)
		gc_hipfile_close(&e->h);
	gc_io_buf_free(&e->stage);
	if (e->rd_bfd >= 0)
		close(e->rd_bfd);
	if (e->wr_bfd >= 0)
		close(e->wr_bfd);
	gc_fp_file_destroy(&e->rd);
	gc_fp_file_destroy(&e->wr);
	free(e);
}

static void say_backends(const struct gc_hipfile *h)
{
	char b[512], v[32];

	gc_info("%s: HIP runtime %s, hipDriverGetVersion %d, %d device(s)", h->hip->soname,
		gc_hip_version_name(h->hip->runtime_version, v, sizeof(v)), h->hip->driver_version,
		h->n_devices);
	for (int x = 0; x < GC_HF_N_ENTRIES; x++)
		gc_info("%s", gc_hf_backend_str(h, (enum gc_hf_entry)x, b, sizeof(b)));
}

static void env_runtime(struct hf_env *e)
{
	char why[512];
	int r = gc_hipfile_open(&e->h, why, sizeof(why));

	if (r && e->h.hip)
		say_backends(&e->h); /* what this machine has, even without a GPU */
	if (r == -ENOENT || r == -ENOSYS || r == -ENODEV) {
		env_free(e);
		gc_skip("%s", why);
	}
	if (r) {
		env_free(e);
		gc_fail("HIP runtime: %s", why);
	}
	say_backends(&e->h);
}

/* Nothing to test: say so before making 500 MiB of scratch files. */
static void env_entries(struct hf_env *e)
{
	char why[512];

	if (have_any(e))
		return;
	none_why(e, why, sizeof(why));
	env_free(e);
	gc_skip("%s", why);
}

/* hipFile's fastpath rules (gc_hf_fastpath_eligible) for files in the scratch dir. */
static void env_rules(struct hf_env *e)
{
	const struct gc_fp_scratch *s = &e->s;
	bool statx = s->dio.source == GC_DIO_ALIGN_STATX;

	e->rules = (struct gc_hf_rules){
		.odirect = s->odirect,
		.device_memory = true,
		.supported_fs = s->block_dev && (!strcmp(s->fs, "ext4") || !strcmp(s->fs, "xfs")),
		.mem_align = statx ? s->dio.mem_align : 0,
		.offset_align = statx ? s->dio.offset_align : 0,
	};
}

static void env_scratch(struct hf_env *e)
{
	const uint64_t need = 2 * FILE_LEN + 64 * MiB;
	char why[512];
	int r = gc_fp_scratch_probe(NULL, &e->s, why, sizeof(why));

	if (!r)
		r = gc_fp_scratch_require(&e->s, GC_FP_NEED_ODIRECT | GC_FP_NEED_BLOCKDEV, why,
					  sizeof(why));
	if (!r && e->s.free_bytes < need) {
		snprintf(why, sizeof(why), "scratch dir %.300s has %llu MiB free, hipfile_io "
			 "needs %llu MiB: set %s to a larger filesystem", e->s.dir,
			 (unsigned long long)(e->s.free_bytes / MiB),
			 (unsigned long long)(need / MiB), GC_SCRATCH_ENV);
		r = -ENOSPC;
	}
	if (r) {
		env_free(e);
		gc_skip("%s", why);
	}
	env_rules(e);
	gc_info("scratch %s: %s on %u:%u, O_DIRECT alignment memory %u / offset %u (%s); "
		"hipFile's fastpath filesystem rule %s", e->s.dir, e->s.fs, e->s.dev_major,
		e->s.dev_minor, e->s.dio.mem_align, e->s.dio.offset_align,
		gc_dio_align_source_name(e->s.dio.source),
		e->rules.supported_fs ? "met" : "not met (ext4 / xfs / block device)");
}

static int reopen(int fd, int flags, int *out)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	*out = open(p, flags | O_CLOEXEC);
	return *out < 0 ? -errno : 0;
}

static void env_files(struct hf_env *e)
{
	char why[512] = "";
	int r = gc_fp_file_create(&e->s, "hipfile-rd", FILE_LEN, RD_SEED, O_RDONLY, false, &e->rd,
				  why, sizeof(why));

	if (!r)
		r = gc_fp_file_create(&e->s, "hipfile-wr", FILE_LEN, WR_OLD, O_RDWR, false, &e->wr,
				      why, sizeof(why));
	if (!r && (r = reopen(e->rd.fd, O_RDONLY, &e->rd_bfd)))
		snprintf(why, sizeof(why), "reopen %.400s: %s", e->rd.path, strerror(-r));
	if (!r && (r = reopen(e->wr.fd, O_RDWR, &e->wr_bfd)))
		snprintf(why, sizeof(why), "reopen %.400s: %s", e->wr.path, strerror(-r));
	if (!r)
		return;
	env_free(e);
	if (r == -ENOSPC || r == -EDQUOT || r == -EACCES || r == -EROFS || r == -EPERM)
		gc_skip("%s", why);
	gc_fail("%s", why);
}

static void env_memory(struct hf_env *e)
{
	hipError_t r = e->h.hip->hipMalloc(&e->dev, DEV_LEN);
	char b[160];
	int err;

	if (r != hipSuccess) {
		gc_hip_errstr(e->h.hip, r, b, sizeof(b));
		e->dev = NULL;
		env_free(e);
		gc_fail("hipMalloc(%llu): %s", (unsigned long long)DEV_LEN, b);
	}
	err = gc_io_buf_alloc(&e->stage, STAGE_LEN, PAGE);
	if (err) {
		env_free(e);
		gc_fail("host staging buffer: %s", strerror(-err));
	}
}

/*
 * The GPU-direct-only entries need a KFD with the AIS ioctl and a PCIe
 * peer-to-peer route between the storage and the GPU; without them every call
 * fails (ENOTTY from a KFD without the ioctl; layer notes, KFD: "[...] -NODEV
 * if AIS is not initialized on the device [...]" (so spelled there) and "[...]
 * -ENODEV if pcie_p2pdma_distance < 0 [...]" [src ROCm/hipFile
 * src/amd_detail/backend/fastpath.cpp @ e875da7de04c]). One aligned 4 KiB read
 * tells: such an entry is then reported missing, with why, so its subtests
 * skip instead of failing on this machine's topology.
 */
static void env_probe_direct(struct hf_env *e, enum gc_hf_entry x)
{
	struct gc_hf_req r = hf_req(x, false, e->rd.fd, NULL, (char *)e->dev + GUARD, 0, PAGE, 0);
	struct gc_hf_res res;
	char desc[768];

	if (!hf_have(e, x))
		return;
	hf_io(e, &r, &res, desc, sizeof(desc));
	gc_info("probe: %s", desc);
	if (res.n != -ENODEV && res.n != -ENOTTY && res.n != -EOPNOTSUPP && res.n != -EREMOTEIO)
		return;
	e->h.backend[x].found = false;
	snprintf(e->h.backend[x].missing, sizeof(e->h.backend[x].missing), "working %s",
		 gc_hf_entry_symbol(x, false));
	snprintf(e->h.backend[x].why, sizeof(e->h.backend[x].why),
		 "%s of 4 KiB at offset 0 of a file on %.160s (%s, %u:%u) failed with %s: no "
		 "GPU-direct path on this machine (a KFD without the AIS ioctl, or no PCIe "
		 "peer-to-peer route between that storage and the GPU)",
		 gc_hf_entry_symbol(x, false), e->s.dir, e->s.fs, e->s.dev_major, e->s.dev_minor,
		 strerrorname_np((int)-res.n));
}

void *hf_setup(void)
{
	struct hf_env *e = calloc(1, sizeof(*e));

	gc_assert_f(e != NULL, "out of memory");
	e->rd_bfd = e->wr_bfd = -1;
	env_runtime(e);
	env_entries(e);
	env_scratch(e);
	env_files(e);
	env_memory(e);
	env_probe_direct(e, GC_HF_HIP_AMD_FILE);
	env_probe_direct(e, GC_HF_HSA_AIS);
	e->use_baseline = hf_have(e, GC_HF_HIPFILE) ? e->h.hf.use_count() : 0;
	if (hf_have(e, GC_HF_HIPFILE))
		gc_info("hipFileUseCount() = %lld before any subtest; "
			"HIPFILE_FORCE_COMPAT_MODE=%s, HIPFILE_ALLOW_COMPAT_MODE=%s",
			(long long)e->use_baseline,
			getenv("HIPFILE_FORCE_COMPAT_MODE") ?: "(unset)",
			getenv("HIPFILE_ALLOW_COMPAT_MODE") ?: "(unset)");
	return e;
}

void hf_teardown(void *data)
{
	env_free(data);
}

/* Descriptors naming a gpuconform scratch file (ours, and hipFile's twins of them). */
static int count_scratch_fds(const struct hf_env *e)
{
	char prefix[sizeof(e->s.dir) + 32], p[64], link[sizeof(prefix) + 64];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	snprintf(prefix, sizeof(prefix), "%s/" GC_SCRATCH_PREFIX, e->s.dir);
	while ((de = readdir(d))) {
		ssize_t l;

		snprintf(p, sizeof(p), "/proc/self/fd/%.40s", de->d_name);
		l = readlink(p, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		n += strncmp(link, prefix, strlen(prefix)) == 0;
	}
	closedir(d);
	return n;
}

void hf_before_each(void *data)
{
	struct hf_env *e = data;

	e->scratch_fds = count_scratch_fds(e);
}

/*
 * Leak checks: every hipFile reference a subtest took is given back
 * (hipFileUseCount back where it was), and no descriptor on a scratch file
 * outlives the subtest: neither ours nor the twins hipFile opens of a
 * registered file (its io-backends document says it keeps a buffered and an
 * O_DIRECT descriptor per registered file).
 */
void hf_after_each(void *data)
{
	struct hf_env *e = data;
	int fds;

	gc_storm_stop_leftover();
	hf_release_all(e);
	if (hf_have(e, GC_HF_HIPFILE))
		gc_assert_f(e->h.hf.use_count() == e->use_baseline,
			    "hipFileUseCount() is %lld after the subtest, %lld before it: a "
			    "reference was not given back", (long long)e->h.hf.use_count(),
			    (long long)e->use_baseline);
	fds = count_scratch_fds(e);
	gc_assert_f(fds == e->scratch_fds, "%d descriptors on scratch files after the subtest, %d "
		    "before it", fds, e->scratch_fds);
}

/* ------------------------------------------------------------ entries */

void hf_require(const struct hf_env *e, enum gc_hf_entry x)
{
	if (!hf_have(e, x))
		gc_skip("%s", e->h.backend[x].why);
}

void hf_require_any(const struct hf_env *e)
{
	char why[512];

	if (!have_any(e))
		gc_skip("%s", none_why(e, why, sizeof(why)));
}

/* One dynamic subtest of hf_each_entry(): the entry, and how it is named. */
struct each_case {
	struct hf_env *e;
	enum gc_hf_entry x;
	bool write, by_symbol;
	void (*fn)(struct hf_env *e, enum gc_hf_entry x, bool write);
};

static const char *each_name(const void *vc, char *buf, size_t len)
{
	const struct each_case *c = vc;

	snprintf(buf, len, "%s", c->by_symbol ? gc_hf_entry_symbol(c->x, c->write)
					      : gc_hf_entry_name(c->x));
	return buf;
}

static void each_one(void *ctx, const void *vc)
{
	const struct each_case *c = vc;

	(void)ctx;
	hf_require(c->e, c->x);
	hf_release_all(c->e); /* whatever an earlier dynamic subtest left when it failed */
	c->fn(c->e, c->x, c->write);
	hf_release_all(c->e);
}

void hf_each_entry(struct hf_env *e, bool write, bool by_symbol,
		   void (*fn)(struct hf_env *e, enum gc_hf_entry x, bool write))
{
	struct each_case cases[GC_HF_N_ENTRIES];

	for (int i = 0; i < GC_HF_N_ENTRIES; i++)
		cases[i] = (struct each_case){ e, (enum gc_hf_entry)i, write, by_symbol, fn };
	gc_each_case(&(const struct gc_cases){ cases, ARRAY_SIZE(cases), sizeof(cases[0]),
					       each_name, each_one },
		     NULL);
}

/* --------------------------------------------------- held resources */

void hf_hold(struct hf_env *e, enum hf_kind kind, void *p)
{
	gc_assert_f(e->n_res < HF_MAX_RES, "more than %d resources held at once", HF_MAX_RES);
	e->res[e->n_res++] = (struct hf_res){ .kind = kind, .u.p = p };
}

static void hold_fd(struct hf_env *e, int fd)
{
	gc_assert_f(e->n_res < HF_MAX_RES, "more than %d resources held at once", HF_MAX_RES);
	e->res[e->n_res++] = (struct hf_res){ .kind = HF_FD, .u.fd = fd };
}

static bool res_is(const struct hf_res *r, enum hf_kind kind, const void *p, int fd)
{
	if (r->kind != kind)
		return false;
	if (kind == HF_FD)
		return r->u.fd == fd;
	return kind == HF_DRIVER || r->u.p == p;
}

static void forget(struct hf_env *e, enum hf_kind kind, const void *p, int fd)
{
	for (int i = e->n_res - 1; i >= 0; i--) {
		if (!res_is(&e->res[i], kind, p, fd))
			continue;
		memmove(&e->res[i], &e->res[i + 1], (size_t)(e->n_res - i - 1) * sizeof(e->res[0]));
		e->n_res--;
		return;
	}
}

void hf_forget(struct hf_env *e, enum hf_kind kind, const void *p)
{
	forget(e, kind, p, -1);
}

static void release_one(struct hf_env *e, const struct hf_res *r)
{
	switch (r->kind) {
	case HF_FD:
		close(r->u.fd);
		break;
	case HF_DEV:
		e->h.hip->hipFree(r->u.p);
		break;
	case HF_PINNED:
		e->h.hip->hipHostFree(r->u.p);
		break;
	case HF_FILE:
		gc_fp_file_destroy(r->u.p);
		free(r->u.p);
		break;
	case HF_HANDLE:
		e->h.hf.handle_deregister(r->u.p);
		break;
	case HF_BUF:
		(void)e->h.hf.buf_deregister(r->u.p);
		break;
	case HF_DRIVER:
		(void)e->h.hf.driver_close();
		break;
	case HF_BATCH:
		e->h.hf.batch_destroy(r->u.p);
		break;
	case HF_STREAM:
		(void)e->h.hip->hipStreamDestroy(r->u.p);
		break;
	case HF_FSTREAM:
		(void)e->h.hf.stream_deregister(r->u.p);
		break;
	}
}

void hf_release_all(struct hf_env *e)
{
	while (e->n_res > 0) {
		struct hf_res r = e->res[--e->n_res];

		release_one(e, &r);
	}
}

int hf_reopen(struct hf_env *e, int fd, int flags)
{
	int out, r = reopen(fd, flags, &out);

	gc_assert_f(r == 0, "open /proc/self/fd/%d (flags 0x%x): %s", fd, flags, strerror(-r));
	hold_fd(e, out);
	return out;
}

void hf_close(struct hf_env *e, int fd)
{
	forget(e, HF_FD, NULL, fd);
	gc_assert_syscall(close(fd));
}

void *hf_dev_alloc(struct hf_env *e, size_t len)
{
	void *p = NULL;

	gc_hip_assert(e->h.hip, e->h.hip->hipMalloc(&p, len));
	hf_hold(e, HF_DEV, p);
	return p;
}

void hf_dev_free(struct hf_env *e, void *p)
{
	hf_forget(e, HF_DEV, p);
	gc_hip_assert(e->h.hip, e->h.hip->hipFree(p));
}

void *hf_pinned_alloc(struct hf_env *e, size_t len)
{
	void *p = NULL;

	gc_hip_assert(e->h.hip, e->h.hip->hipHostMalloc(&p, len, 0));
	hf_hold(e, HF_PINNED, p);
	return p;
}

struct gc_fp_file *hf_file(struct hf_env *e, const char *tag, uint64_t size, uint64_t seed,
			   int open_flags)
{
	struct gc_fp_file *f = calloc(1, sizeof(*f));
	char why[512];
	int r;

	gc_assert_f(f != NULL, "out of memory");
	r = gc_fp_file_create(&e->s, tag, size, seed, open_flags, false, f, why, sizeof(why));
	if (r)
		free(f);
	gc_assert_f(r == 0, "%s", why);
	hf_hold(e, HF_FILE, f);
	return f;
}

void hf_file_destroy(struct hf_env *e, struct gc_fp_file *f)
{
	hf_forget(e, HF_FILE, f);
	gc_fp_file_destroy(f);
	free(f);
}

gc_hipfile_err hf_register(struct hf_env *e, int fd, gc_hipfile_handle *fh)
{
	gc_hipfile_descr d = { .type = GC_HIPFILE_HANDLE_TYPE_OPAQUE_FD, .handle.fd = fd };
	gc_hipfile_err r = e->h.hf.handle_register(fh, &d);

	if (r.err == GC_HIPFILE_SUCCESS)
		hf_hold(e, HF_HANDLE, *fh);
	return r;
}

gc_hipfile_handle hf_register_ok(struct hf_env *e, int fd)
{
	gc_hipfile_handle fh = NULL;
	gc_hipfile_err r = hf_register(e, fd, &fh);
	char b[256];

	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileHandleRegister(fd %d): %s", fd,
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	return fh;
}

void hf_deregister(struct hf_env *e, gc_hipfile_handle fh)
{
	hf_forget(e, HF_HANDLE, fh);
	e->h.hf.handle_deregister(fh);
}

void hf_buf_register_ok(struct hf_env *e, const void *base, size_t len)
{
	gc_hipfile_err r = e->h.hf.buf_register(base, len, 0);
	char b[256];

	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileBufRegister(%llu bytes): %s",
		    (unsigned long long)len, gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	hf_hold(e, HF_BUF, (void *)base);
}

void hf_buf_deregister_ok(struct hf_env *e, const void *base)
{
	gc_hipfile_err r;
	char b[256];

	hf_forget(e, HF_BUF, base);
	r = e->h.hf.buf_deregister(base);
	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileBufDeregister: %s",
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
}

void hf_driver_open_ok(struct hf_env *e)
{
	gc_hipfile_err r = e->h.hf.driver_open();
	char b[256];

	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileDriverOpen: %s",
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	hf_hold(e, HF_DRIVER, NULL);
}

void hf_driver_close_ok(struct hf_env *e)
{
	gc_hipfile_err r;
	char b[256];

	hf_forget(e, HF_DRIVER, NULL);
	r = e->h.hf.driver_close();
	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileDriverClose: %s",
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
}

void hf_driver_ensure(struct hf_env *e)
{
	for (int i = 0; i < e->n_res; i++)
		if (e->res[i].kind == HF_DRIVER)
			return;
	hf_driver_open_ok(e);
}

gc_hipfile_handle hf_handle_for(struct hf_env *e, enum gc_hf_entry x, int fd)
{
	if (x != GC_HF_HIPFILE)
		return NULL;
	hf_driver_ensure(e);
	return hf_register_ok(e, fd);
}

/* --------------------------------------------------------- requests */

struct gc_hf_req hf_req(enum gc_hf_entry x, bool write, int fd, gc_hipfile_handle fh,
			void *base, int64_t buf_off, uint64_t size, int64_t foff)
{
	return (struct gc_hf_req){ .entry = x, .write = write, .fd = fd, .fh = fh, .base = base,
				    .buf_off = buf_off, .size = size, .file_off = foff };
}

struct gc_hf_req hf_req_dev(const struct hf_env *e, enum gc_hf_entry x, bool write, int fd,
			    gc_hipfile_handle fh, char *data, uint64_t size, int64_t foff)
{
	char *dev = e->dev;

	if (x == GC_HF_HIPFILE && data >= dev && data < dev + DEV_LEN)
		return hf_req(x, write, fd, fh, dev, data - dev, size, foff);
	return hf_req(x, write, fd, fh, data, 0, size, foff);
}

const char *hf_path_str(const struct hf_env *e, const struct gc_hf_req *r,
			const struct gc_hf_res *res, char *buf, size_t len)
{
	char why[192], rules[128];
	enum gc_hf_path p = gc_hf_served(r->entry, res, getenv("HIPFILE_FORCE_COMPAT_MODE"), why,
					 sizeof(why));
	bool fast;

	if (p != GC_HF_PATH_CANNOT_TELL) {
		snprintf(buf, len, "%s (%s)", gc_hf_path_name(p), why);
		return buf;
	}
	fast = gc_hf_fastpath_eligible(&e->rules, (uintptr_t)r->base, r->size, r->file_off,
				       r->buf_off, rules, sizeof(rules));
	snprintf(buf, len, "cannot tell (%s); its documented rules predict the %s: %s", why,
		 fast ? "fastpath" : "fallback", rules);
	return buf;
}

int64_t hf_io(struct hf_env *e, const struct gc_hf_req *r, struct gc_hf_res *res, char *desc,
	      size_t len)
{
	char rs[384], ps[384];

	gc_hf_io(&e->h, r, res);
	if (desc)
		snprintf(desc, len, "%s; path: %s", gc_hf_res_str(&e->h, r, res, rs, sizeof(rs)),
			 hf_path_str(e, r, res, ps, sizeof(ps)));
	return res->n;
}

/* ------------------------------------------------------------ checks */

void hf_dev_fill(struct hf_env *e, void *dev, uint64_t len, uint64_t key, uint64_t seed,
		 bool inv)
{
	hipError_t he = hipSuccess;

	if (gc_hip_fill_pattern(&e->h, dev, len, key, seed, inv, e->stage.ptr, STAGE_LEN, &he))
		gc_hip_assert(e->h.hip, he);
}

void hf_dev_expect(struct hf_env *e, const char *what, const void *dev, uint64_t len,
		   uint64_t key, uint64_t seed, bool inv)
{
	hipError_t he = hipSuccess;
	struct gc_mismatch mm;
	char msg[192];
	int r = gc_hip_check_pattern(&e->h, dev, len, key, seed, inv, e->stage.ptr, STAGE_LEN,
				     &mm, &he);

	if (r < 0)
		gc_hip_assert(e->h.hip, he);
	gc_assert_f(r == 0, "%s: device %s", what, gc_mismatch_str(&mm, msg, sizeof(msg)));
}

void hf_poison(struct hf_env *e, char *data, uint64_t size, uint64_t foff, uint64_t seed)
{
	hf_dev_fill(e, data - GUARD, size + 2 * GUARD, foff - GUARD, seed, true);
}

void hf_expect_read(struct hf_env *e, const char *what, const char *data, uint64_t size,
		    uint64_t done, uint64_t foff, uint64_t seed)
{
	char w[192];

	snprintf(w, sizeof(w), "%s: guard before the target", what);
	hf_dev_expect(e, w, data - GUARD, GUARD, foff - GUARD, seed, true);
	snprintf(w, sizeof(w), "%s: the %llu bytes transferred", what, (unsigned long long)done);
	hf_dev_expect(e, w, data, done, foff, seed, false);
	snprintf(w, sizeof(w), "%s: target bytes past the count", what);
	hf_dev_expect(e, w, data + done, size - done, foff + done, seed, true);
	snprintf(w, sizeof(w), "%s: guard after the target", what);
	hf_dev_expect(e, w, data + size, GUARD, foff + size, seed, true);
}

void hf_source(struct hf_env *e, char *data, uint64_t size, uint64_t foff)
{
	hf_dev_fill(e, data - GUARD, GUARD, foff - GUARD, WR_OLD, true);
	hf_dev_fill(e, data, size, foff, WR_NEW, false);
	hf_dev_fill(e, data + size, GUARD, foff + size, WR_OLD, true);
}

void hf_expect_source(struct hf_env *e, const char *what, const char *data, uint64_t size,
		      uint64_t foff)
{
	char w[192];

	snprintf(w, sizeof(w), "%s: guard before the source", what);
	hf_dev_expect(e, w, data - GUARD, GUARD, foff - GUARD, WR_OLD, true);
	snprintf(w, sizeof(w), "%s: the source bytes", what);
	hf_dev_expect(e, w, data, size, foff, WR_NEW, false);
	snprintf(w, sizeof(w), "%s: guard after the source", what);
	hf_dev_expect(e, w, data + size, GUARD, foff + size, WR_OLD, true);
}

void hf_file_restore(struct hf_env *e, int bfd, uint64_t off, uint64_t len, uint64_t seed)
{
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < STAGE_LEN ? (size_t)(len - done) : STAGE_LEN;

		gc_pattern_fill(e->stage.ptr, n, off + done, seed);
		gc_assert_cmpint(gc_io_pwrite_all(bfd, e->stage.ptr, n, (off_t)(off + done)), ==,
				 n);
		done += n;
	}
	gc_assert_syscall(fdatasync(bfd));
	gc_assert_cmpint(posix_fadvise(bfd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED), ==, 0);
}

void hf_file_expect(const struct gc_fp_file *f, int bfd, uint64_t off, uint64_t len,
		    uint64_t seed, const char *what)
{
	struct gc_mismatch mm;
	char msg[192];
	int64_t bad;

	/* Clean cached pages may predate a write that bypassed the page cache. */
	(void)posix_fadvise(bfd, 0, 0, POSIX_FADV_DONTNEED);
	bad = gc_fp_file_check(f, off, len, seed, &mm);
	gc_assert_f(bad < 0, "%s: file %s", what, gc_mismatch_str(&mm, msg, sizeof(msg)));
}

void hf_expect_written(struct hf_env *e, const struct gc_fp_file *f, int bfd, uint64_t lo,
		       uint64_t hi, uint64_t foff, uint64_t done, const char *what)
{
	struct stat st;
	char w[192];

	(void)e;
	snprintf(w, sizeof(w), "%s: bytes before the written range", what);
	hf_file_expect(f, bfd, lo, foff - lo, WR_OLD, w);
	snprintf(w, sizeof(w), "%s: the %llu bytes written", what, (unsigned long long)done);
	hf_file_expect(f, bfd, foff, done, WR_NEW, w);
	snprintf(w, sizeof(w), "%s: bytes after the written count", what);
	hf_file_expect(f, bfd, foff + done, hi - foff - done, WR_OLD, w);
	gc_assert_syscall(fstat(bfd, &st));
	gc_assert_f((uint64_t)st.st_size == f->size, "%s: the file is now %lld bytes, was %llu",
		    what, (long long)st.st_size, (unsigned long long)f->size);
}
