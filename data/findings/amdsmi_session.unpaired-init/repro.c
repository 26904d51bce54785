/*
 * amdsmi_session@unpaired-init, predicted from the source (not yet seen on hardware).
 * cc -std=c11 -O2 -Wall -Wextra -pthread -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lamd_smi
 *
 * amdsmi_init: "Singleton Design, requires the same number of inits as shutdowns. Threads
 * may call amdsmi_init and amdsmi_shut_down concurrently; the calls are serialized."
 * (rocm.docs.amd.com/projects/amdsmi/en/docs-10.2.0, reference/amdsmi-cpp-api/functions.html;
 * the first sentence also [src ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @
 * a881068735de]) The prediction: `if (init_ref_count > 0 )` and `cleanup()` at 0, unlocked
 * [src paklui/rocm-systems projects/amdsmi/src/amd_smi/amd_smi.cc @ 855bb2203905] (26.2.1).
 * As the suite: 64 inits at once, the GPUs listed as in a reference session, 64 shutdowns at
 * once; then a new session works and closes every device node. A race: a pass proves little.
 * Exit 1: a call failed or answered wrong, no call returning for 30 s, a crash, nodes left
 * open (the prediction); 0: none; 2: cannot check (no AMD GPU, amdsmi older than 26.2.1).
 */
#define _GNU_SOURCE
#include <amd_smi/amdsmi.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define UNPAIRED 64
#define STALL_S 30 /* no call returned for so long: a deadlock */
#define MAXDEV 64

static struct gpu { char uuid[AMDSMI_GPU_UUID_SIZE + 2]; uint64_t bdf; } dev[MAXDEV];
static unsigned ndev;
static int fds0; /* device node descriptors before the first session */
static atomic_int problems;
static pthread_barrier_t bar; /* releases a burst's threads at once */
static char first[256]; /* the first problem's words */

static const char *sname(amdsmi_status_t r)
{
	const char *s = NULL;

	return amdsmi_status_code_to_string(r, &s) == AMDSMI_STATUS_SUCCESS && s ? s : "?";
}

static void problem(const char *what, const char *detail)
{
	if (atomic_fetch_add(&problems, 1) == 0)
		snprintf(first, sizeof(first), "%s: %s", what, detail);
}

static int devfds(void) /* descriptors open on /dev/kfd, /dev/dri/..., /dev/gim-smi... */
{
	DIR *d = opendir("/proc/self/fd");
	char p[300], l[256];
	struct dirent *e;
	ssize_t k;
	int n = 0;

	while (d && (e = readdir(d))) {
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		l[(k = readlink(p, l, sizeof(l) - 1)) > 0 ? k : 0] = '\0';
		n += !strcmp(l, "/dev/kfd") || !strncmp(l, "/dev/dri/", 9) || !strncmp(l, "/dev/gim-smi", 12);
	}
	return d && closedir(d) == 0 ? n : -1;
}

/* The session's AMD GPUs, socket by socket, into g[] (UUID, PCI id); how many into *n. */
static amdsmi_status_t gpus(struct gpu *g, unsigned *n)
{
	amdsmi_socket_handle s[64];
	amdsmi_processor_handle p[256];
	uint32_t ns = 64, np;
	amdsmi_status_t r = amdsmi_get_socket_handles(&ns, s);

	for (uint32_t i = *n = 0; !r && i < ns && i < 64; i++) {
		np = 256;
		r = amdsmi_get_processor_handles(s[i], &np, p);
		for (uint32_t j = 0; !r && j < np && j < 256 && *n < MAXDEV; j++) {
			unsigned len = AMDSMI_GPU_UUID_SIZE + 1; /* the UUID's room, as amdsmi.h asks */
			processor_type_t t;

			if (!(r = amdsmi_get_processor_type(p[j], &t)) && t == AMDSMI_PROCESSOR_TYPE_AMD_GPU &&
			    !(r = amdsmi_get_gpu_device_uuid(p[j], &len, g[*n].uuid)))
				r = amdsmi_get_gpu_bdf_id(p[j], &g[(*n)++].bdf);
		}
	}
	return r;
}

/* A request: the session lists the reference session's GPUs, their UUIDs and PCI ids. */
static void request(const char *who)
{
	struct gpu g[MAXDEV] = { 0 };
	unsigned n = 0;
	amdsmi_status_t r = gpus(g, &n);

	if (r || n != ndev || memcmp(g, dev, n * sizeof(g[0])))
		problem(who, r ? sname(r) : "its GPUs differ from the reference session's");
}

/* A burst thread: waits for the others, then one amdsmi_init, or (arg) one amdsmi_shut_down. */
static void *thread(void *arg)
{
	amdsmi_status_t r;

	pthread_barrier_wait(&bar);
	if ((r = arg ? amdsmi_shut_down() : amdsmi_init(AMDSMI_INIT_AMD_GPUS)))
		problem(arg ? "amdsmi_shut_down" : "amdsmi_init", sname(r));
	return NULL;
}

/* UNPAIRED threads released at once, each one init (or, shut, one shutdown); 2 on a failure. */
static int burst(uintptr_t shut)
{
	pthread_t t[UNPAIRED];
	struct timespec by;

	for (unsigned i = 0; i < UNPAIRED; i++)
		if (pthread_create(&t[i], NULL, thread, (void *)shut))
			return printf("cannot check: pthread_create %u\n", i), 2;
	for (unsigned i = 0; i < UNPAIRED; i++) /* each within STALL_S s of the one before */
		if (clock_gettime(CLOCK_REALTIME, &by) || (by.tv_sec += STALL_S,
							      pthread_timedjoin_np(t[i], NULL, &by)))
			printf("actual: deadlock: a call did not return in %d s\n", STALL_S),
				fflush(stdout), _exit(1); /* _exit: threads are stuck in the library */
	return 0;
}

static void died(int sig) /* a crash during the bursts is the finding too */
{
	(void)sig, (void)!write(STDOUT_FILENO, "actual: a crash during the bursts\n", 34);
	_exit(1);
}

int main(void)
{
	amdsmi_version_t v = { 0 };
	amdsmi_status_t r;

	fds0 = devfds();
	if ((r = amdsmi_init(AMDSMI_INIT_AMD_GPUS)))
		return printf("cannot check: amdsmi_init: %s (no AMD GPU?)\n", sname(r)), 2;
	if ((r = amdsmi_get_lib_version(&v)) || v.major * 1000000ul + v.minor * 1000ul + v.release <
						    26002001ul)
		return printf("cannot check: amdsmi %u.%u.%u (amdsmi_get_lib_version: %s): no "
			      "count before 26.2.1\n", v.major, v.minor, v.release, sname(r)), 2;
	if ((r = gpus(dev, &ndev)) || !ndev || amdsmi_shut_down() || devfds() != fds0)
		return printf("cannot check: the reference session: %s, %u GPUs\n", sname(r), ndev), 2;
	printf("expected: amdsmi %u.%u.%u: %d inits, then %d shutdowns, at once: all work, the %u GPUs "
	       "listed between; then no device node open\n", v.major, v.minor, v.release, UNPAIRED,
	       UNPAIRED, ndev);
	fflush(stdout);
	signal(SIGSEGV, died), signal(SIGBUS, died), signal(SIGABRT, died), signal(SIGFPE, died);
	pthread_barrier_init(&bar, NULL, UNPAIRED);
	if (burst(0))
		return 2;
	if (!atomic_load(&problems)) /* the inits all worked: the session is open */
		request("between the bursts");
	if (burst(1))
		return 2;
	if (amdsmi_init(AMDSMI_INIT_AMD_GPUS))
		problem("a new session", "amdsmi_init failed");
	request("a new session");
	if (amdsmi_shut_down() || devfds() != fds0)
		problem("a new session", "its shutdown failed, or device nodes left open");
	printf("actual: %d problems%s%s\n", atomic_load(&problems),
	       atomic_load(&problems) ? "; the first: " : "", first);
	return atomic_load(&problems) ? 1 : 0;
}
