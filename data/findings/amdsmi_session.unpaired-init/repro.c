/*
 * amdsmi_session@unpaired-init, predicted from the source (not yet seen on
 * hardware): 64 inits at once and then 64 shutdowns at once, from different
 * threads, lose count: a call fails, the session is gone between the bursts,
 * or device nodes stay open after the last shutdown.
 *
 * cc -std=c11 -O2 -Wall -Wextra -pthread -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lamd_smi
 *
 * amdsmi_init: "Singleton Design, requires the same number of inits as
 * shutdowns. Threads may call amdsmi_init and amdsmi_shut_down concurrently;
 * the calls are serialized." (rocm.docs.amd.com/projects/amdsmi/en/docs-10.2.0,
 * reference/amdsmi-cpp-api/functions.html; amdsmi.h 26.2.1 has the first
 * sentence [src ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @
 * a881068735de]). So 64 inits all succeed and open the session, 64
 * shutdowns all succeed and the last one closes it: no device node stays
 * open, and a new session works.
 *
 * The prediction: amdsmi_init tests `if (init_ref_count > 0 )` then counts,
 * amdsmi_shut_down counts down and runs `cleanup()` at 0, with no lock around
 * test, init and change [src paklui/rocm-systems
 * projects/amdsmi/src/amd_smi/amd_smi.cc @ 855bb2203905] (26.2.1); 27.1.0
 * makes the count atomic, init / cleanup still unlocked [src
 * amd-vkale/rocm-systems projects/amdsmi/src/amd_smi/amd_smi_common.cc @
 * 5d4ce3a988c2]. A race: a pass proves little.
 *
 * As the suite does it: 64 threads released at once, one amdsmi_init each,
 * none shut down; the session must then list the reference session's GPUs;
 * 64 other threads released at once, one amdsmi_shut_down each; then no
 * device node open and a new session sees every GPU as before. No call
 * completing for 30 s is a deadlock. In a child process, so that a crash
 * shows.
 * Exit 1: a call failed, the session gone between the bursts, nodes left
 * open, a new session broken, deadlock or crash (the prediction); 0: none;
 * 2: cannot check (no AMD GPU, amdsmi older than 26.2.1, a setup call failed).
 */
#define _GNU_SOURCE
#include <amd_smi/amdsmi.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNPAIRED 64
#define STALL_S 30
#define MAXDEV 64

static struct gpu { char uuid[AMDSMI_GPU_UUID_SIZE + 2]; uint64_t bdf; } dev[MAXDEV];
static unsigned ndev;
static int fds0;
static atomic_ulong progress;
static atomic_int go, problems;
static char first[256];

static const char *sname(amdsmi_status_t r)
{
	const char *s = NULL;

	return amdsmi_status_code_to_string(r, &s) == AMDSMI_STATUS_SUCCESS && s ? s : "?";
}

static void problem(const char *what, const char *detail)
{
	if (atomic_fetch_add(&problems, 1) == 0) /* the first one's words: written once */
		snprintf(first, sizeof(first), "%s: %s", what, detail);
}

/* Descriptors open on /dev/kfd, /dev/dri/... and /dev/gim-smi... */
static int devfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	char p[300], l[256];
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		ssize_t k;

		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		if ((k = readlink(p, l, sizeof(l) - 1)) <= 0)
			continue;
		l[k] = '\0';
		n += !strcmp(l, "/dev/kfd") || !strncmp(l, "/dev/dri/", 9) ||
		     !strncmp(l, "/dev/gim-smi", 12);
	}
	if (d)
		closedir(d);
	return n;
}

/* The AMD GPUs socket by socket: into dev[] (want NULL), or the one whose UUID is want. */
static amdsmi_status_t walk(const char *want, uint64_t *bdf)
{
	amdsmi_socket_handle s[64];
	amdsmi_processor_handle p[256];
	uint32_t ns = 64, np;
	amdsmi_status_t r = amdsmi_get_socket_handles(&ns, s);

	for (uint32_t i = 0; !r && i < ns && i < 64; i++) {
		np = 256;
		r = amdsmi_get_processor_handles(s[i], &np, p);
		for (uint32_t j = 0; !r && j < np && j < 256; j++) {
			char id[AMDSMI_GPU_UUID_SIZE + 2] = "";
			unsigned len = AMDSMI_GPU_UUID_SIZE + 1;
			processor_type_t t;

			if ((r = amdsmi_get_processor_type(p[j], &t)) ||
			    t != AMDSMI_PROCESSOR_TYPE_AMD_GPU ||
			    (r = amdsmi_get_gpu_device_uuid(p[j], &len, id)))
				continue;
			if (want && !strcmp(id, want))
				return amdsmi_get_gpu_bdf_id(p[j], bdf);
			if (!want && ndev < MAXDEV) {
				memcpy(dev[ndev].uuid, id, sizeof(id));
				r = amdsmi_get_gpu_bdf_id(p[j], &dev[ndev++].bdf);
			}
		}
	}
	return r || !want ? r : AMDSMI_STATUS_NOT_FOUND;
}

static void *burst_thread(void *arg)
{
	amdsmi_status_t r;

	while (!atomic_load(&go))
		sched_yield();
	r = arg ? amdsmi_shut_down() : amdsmi_init(AMDSMI_INIT_AMD_GPUS);
	if (r)
		problem(arg ? "amdsmi_shut_down" : "amdsmi_init", sname(r));
	atomic_fetch_add(&progress, 1);
	return NULL;
}

/* UNPAIRED threads released at once, each one init (or, shut, one shutdown); 1 on a deadlock. */
static int burst(int shut)
{
	pthread_t t[UNPAIRED];
	unsigned long last = atomic_load(&progress), target = last + UNPAIRED;
	time_t since = time(NULL);

	atomic_store(&go, 0);
	for (unsigned i = 0; i < UNPAIRED; i++)
		if (pthread_create(&t[i], NULL, burst_thread, (void *)(uintptr_t)shut))
			return printf("cannot check: pthread_create %u\n", i), 2;
	atomic_store(&go, 1);
	while (atomic_load(&progress) < target && !usleep(10000))
		if (atomic_load(&progress) != last)
			last = atomic_load(&progress), since = time(NULL);
		else if (time(NULL) - since > STALL_S)
			return printf("actual: deadlock: %lu of %d %s returned within %d s\n",
				      last + UNPAIRED - target, UNPAIRED,
				      shut ? "amdsmi_shut_down" : "amdsmi_init", STALL_S), 1;
	for (unsigned i = 0; i < UNPAIRED; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* In the child: the two bursts, the session between them, then the nodes and a new session. */
static int storm(void)
{
	uint64_t bdf = 0;
	int r;

	if ((r = burst(0)))
		return r;
	for (unsigned i = 0; i < ndev && !atomic_load(&problems); i++) /* the inits all worked */
		if (walk(dev[i].uuid, &bdf) || bdf != dev[i].bdf)
			problem("between the bursts", "a GPU of the reference session not found");
	if ((r = burst(1)))
		return r;
	if (devfds() != fds0)
		problem("after 64 inits and 64 shutdowns", "device nodes left open");
	if (amdsmi_init(AMDSMI_INIT_AMD_GPUS))
		problem("a new session", "amdsmi_init failed");
	for (unsigned i = 0; i < ndev; i++)
		if (walk(dev[i].uuid, &bdf) || bdf != dev[i].bdf)
			problem("a new session", "a GPU not found as before");
	if (amdsmi_shut_down() || devfds() != fds0)
		problem("a new session", "its shutdown failed or left nodes open");
	printf("actual: %d problems%s%s\n", atomic_load(&problems),
	       atomic_load(&problems) ? "; the first: " : "", first);
	return atomic_load(&problems) ? 1 : 0;
}

int main(void)
{
	amdsmi_version_t v = { 0 };
	amdsmi_status_t r;
	int status;
	pid_t pid;

	fds0 = devfds();
	if ((r = amdsmi_init(AMDSMI_INIT_AMD_GPUS)))
		return printf("cannot check: amdsmi_init: %s (no AMD GPU?)\n", sname(r)), 2;
	if ((r = amdsmi_get_lib_version(&v)) ||
	    v.major * 1000000ul + v.minor * 1000ul + v.release < 26002001ul)
		return printf("cannot check: amdsmi %u.%u.%u (amdsmi_get_lib_version: %s): no "
			      "count before 26.2.1\n", v.major, v.minor, v.release, sname(r)), 2;
	if ((r = walk(NULL, NULL)) || !ndev || amdsmi_shut_down() || devfds() != fds0)
		return printf("cannot check: the reference session: %s, %u GPUs\n", sname(r),
			      ndev), 2;
	printf("expected: amdsmi %u.%u.%u, %d inits at once and %d shutdowns at once all succeed, "
	       "the session lists the %u GPUs between them; then no device node open, a new "
	       "session sees them\n", v.major, v.minor, v.release, UNPAIRED, UNPAIRED, ndev);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		status = storm();
		fflush(stdout);
		_exit(status);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return printf("cannot check: fork\n"), 2;
	if (WIFSIGNALED(status))
		return printf("actual: the process died of signal %d (%s) during the bursts\n",
			      WTERMSIG(status), strsignal(WTERMSIG(status))), 1;
	return WEXITSTATUS(status);
}
