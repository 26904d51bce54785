/*
 * amdsmi_session@concurrent-sessions, predicted from the source (not yet seen on hardware).
 * cc -std=c11 -O2 -Wall -Wextra -pthread -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lamd_smi
 *
 * amdsmi_init: "Singleton Design, requires the same number of inits as shutdowns. Threads
 * may call amdsmi_init and amdsmi_shut_down concurrently; the calls are serialized."
 * (rocm.docs.amd.com/projects/amdsmi/en/docs-10.2.0, reference/amdsmi-cpp-api/functions.html;
 * the first sentence also [src ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @
 * a881068735de]) The prediction: `if (init_ref_count > 0 )` and `cleanup()` at 0, unlocked
 * [src paklui/rocm-systems projects/amdsmi/src/amd_smi/amd_smi.cc @ 855bb2203905] (26.2.1).
 * The suite's quick level: 256 threads x 20 (argv[1]: more) sessions of one request (the GPUs
 * listed as in a reference session) while a watcher's session polls; then a new session works
 * and closes every device node. A race: a pass proves little. Exit 1: a call failed or answered
 * wrong, no round for 30 s, a crash, nodes left open (the prediction); 0: none; 2: can't check.
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

#define THREADS 256
#define STALL_S 30 /* no round ended for so long: a deadlock */
#define MAXDEV 64

static struct gpu { char uuid[AMDSMI_GPU_UUID_SIZE + 2]; uint64_t bdf; } dev[MAXDEV];
static unsigned ndev, rounds = 20;
static int fds0; /* device node descriptors before the first session */
static atomic_ulong progress;
static atomic_int stop, problems;
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

/* Threads < THREADS: rounds of a one-request session; THREADS: the watcher's long session. */
static void *thread(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (unsigned i = 0; i < (id < THREADS ? rounds : 1); i++) {
		amdsmi_status_t r = amdsmi_init(AMDSMI_INIT_AMD_GPUS);

		if (r)
			problem("amdsmi_init", sname(r));
		else do /* the watcher: a request every ms (at least one) until told to stop */
			request(id < THREADS ? "a request" : "the watcher's request");
		while (id == THREADS && !atomic_load(&stop) && !usleep(1000));
		if (!r && (r = amdsmi_shut_down()))
			problem("amdsmi_shut_down", sname(r));
		atomic_fetch_add(&progress, id < THREADS);
	}
	return NULL;
}

static void died(int sig) /* a crash during the sessions is the finding too */
{
	(void)sig, (void)!write(STDOUT_FILENO, "actual: a crash during the sessions\n", 36);
	_exit(1);
}

int main(int argc, char **argv)
{
	amdsmi_version_t v = { 0 };
	pthread_t t[THREADS + 1];
	unsigned long last = 0;
	time_t since = time(NULL);
	amdsmi_status_t r;

	rounds = argc > 1 && atoi(argv[1]) > 0 ? (unsigned)atoi(argv[1]) : rounds; /* a count only */
	fds0 = devfds();
	if ((r = amdsmi_init(AMDSMI_INIT_AMD_GPUS)))
		return printf("cannot check: amdsmi_init: %s (no AMD GPU?)\n", sname(r)), 2;
	if ((r = amdsmi_get_lib_version(&v)) || v.major * 1000000ul + v.minor * 1000ul + v.release <
						    26002001ul)
		return printf("cannot check: amdsmi %u.%u.%u (amdsmi_get_lib_version: %s): no "
			      "count before 26.2.1\n", v.major, v.minor, v.release, sname(r)), 2;
	if ((r = gpus(dev, &ndev)) || !ndev || amdsmi_shut_down() || devfds() != fds0)
		return printf("cannot check: the reference session: %s, %u GPUs\n", sname(r), ndev), 2;
	printf("expected: amdsmi %u.%u.%u, %u x %u sessions and a watcher's: every call works, as in "
	       "a reference session of %u GPUs\n", v.major, v.minor, v.release, THREADS, rounds, ndev);
	fflush(stdout);
	signal(SIGSEGV, died), signal(SIGBUS, died), signal(SIGABRT, died), signal(SIGFPE, died);
	for (uintptr_t i = 0; i <= THREADS; i++)
		if (pthread_create(&t[i], NULL, thread, (void *)i))
			return printf("cannot check: pthread_create %u\n", (unsigned)i), 2;
	while (atomic_load(&progress) < (unsigned long)THREADS * rounds && !usleep(10000))
		if (atomic_load(&progress) != last)
			last = atomic_load(&progress), since = time(NULL);
		else if (time(NULL) - since > STALL_S) /* _exit: threads are stuck in the library */
			printf("actual: deadlock: no round ended for %d s, %lu before\n", STALL_S, last),
				fflush(stdout), _exit(1);
	atomic_store(&stop, 1);
	for (unsigned i = 0; i <= THREADS; i++)
		pthread_join(t[i], NULL);
	if (amdsmi_init(AMDSMI_INIT_AMD_GPUS))
		problem("a new session", "amdsmi_init failed");
	request("a new session");
	if (amdsmi_shut_down() || devfds() != fds0)
		problem("a new session", "its shutdown failed, or device nodes left open");
	printf("actual: %d problems%s%s\n", atomic_load(&problems),
	       atomic_load(&problems) ? "; the first: " : "", first);
	return atomic_load(&problems) ? 1 : 0;
}
