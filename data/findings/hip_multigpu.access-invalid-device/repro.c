/*
 * hip_multigpu@access-invalid-device, predicted from the source (not yet seen
 * on hardware): hipMemSetAccess with an invalid device after a valid one in
 * its list fails, but leaves the valid one granted.
 *
 * cc -std=c11 -O2 -Wall -Wextra -D__HIP_PLATFORM_AMD__ -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lamdhip64
 *
 * hip_runtime_api.h, hipMemSetAccess: "@brief Set the access flags for each
 * location specified in desc for the given virtual address range." [src
 * ROCm/HIP include/hip/hip_runtime_api.h @ rocm-5.2.3] With an invalid
 * location in desc the call is refused, and a refused call grants nothing
 * (the suite's multigpu contract: all-or-nothing, never a silent partial state).
 *
 * The prediction: hipMemSetAccess checks `desc[desc_idx].location.id >=
 * g_devices.size()` inside its loop over the list, after the entries before
 * it went through `SetMemAccess` [src ROCm/clr hipamd/src/hip_vm.cpp @
 * f9f995c6d0ae]: a bad ordinal second or last leaves the devices before it
 * with access while the call returns hipErrorInvalidValue.
 *
 * As the suite does it for the pair (a, b) = (0, 1): one granule on gpu0,
 * reserved; for each bad ordinal (the device count, then -1) at each position
 * of [0, 1]: map, hipMemSetAccess(3 entries, ReadWrite), hipMemGetAccess of
 * every device, unmap. Then the control: [0, 1] alone is granted and seen.
 * Exit 1: a device has access after a call that listed a bad ordinal (the
 * prediction); 0: none has; 2: cannot check (fewer than 2 GPUs, no VMM or
 * peer access, a setup call failed, hipMemGetAccess does not show the control).
 */
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define OK(call) do { hipError_t e_ = (call); if (e_ != hipSuccess) { \
	printf("cannot check: %s: %s\n", #call, hipGetErrorName(e_)); exit(2); } } while (0)

static int ndev;
static void *va;
static size_t size;
static hipMemGenericAllocationHandle_t h;

static hipError_t set_access(const int *devs, int n)
{
	hipMemAccessDesc d[3] = { 0 };

	for (int i = 0; i < n; i++) {
		d[i].location.type = hipMemLocationTypeDevice;
		d[i].location.id = devs[i];
		d[i].flags = hipMemAccessFlagsProtReadWrite;
	}
	return hipMemSetAccess(va, size, d, (size_t)n);
}

/* Every device's access to va into out (a text); how many have any (-1: unreadable). */
static int granted(char *out, size_t len)
{
	int n = 0, used = 0;

	for (int d = 0; d < ndev && d < 16; d++) {
		hipMemLocation loc = { .type = hipMemLocationTypeDevice, .id = d };
		unsigned long long f = 0;
		hipError_t e = hipMemGetAccess(&f, &loc, va);

		used += snprintf(out + used, len - (size_t)used, " gpu%d %s", d,
				 e != hipSuccess ? hipGetErrorName(e) : f ? "ReadWrite" : "none");
		n = e != hipSuccess || n < 0 ? -1 : n + (f != 0);
	}
	return n;
}

int main(void)
{
	hipMemAllocationProp p = { .type = hipMemAllocationTypePinned,
				   .location = { .type = hipMemLocationTypeDevice, .id = 0 } };
	int can = 0, broken = 0, unread = 0, g;
	char seen[512];
	hipError_t e = hipGetDeviceCount(&ndev);

	if (e != hipSuccess || ndev < 2) {
		printf("cannot check: needs 2 AMD GPUs (hipGetDeviceCount: %s, %d)\n",
		       hipGetErrorName(e), ndev);
		return 2;
	}
	OK(hipDeviceCanAccessPeer(&can, 1, 0));
	if (!can)
		return printf("cannot check: gpu1 cannot access gpu0's memory\n"), 2;
	OK(hipSetDevice(0));
	OK(hipMemGetAllocationGranularity(&size, &p, hipMemAllocationGranularityMinimum));
	OK(hipMemCreate(&h, size, &p, 0));
	OK(hipMemAddressReserve(&va, size, 0, NULL, 0));
	printf("expected: every call listing a bad ordinal refused, no device granted\n");
	for (int v = 0; v < 2; v++)
		for (int pos = 0; pos < 3; pos++) {
			int bad = v ? -1 : ndev, list[3], j = 0;

			for (int i = 0; i < 3; i++)
				list[i] = i == pos ? bad : j++;
			OK(hipMemMap(va, size, 0, h, 0));
			e = set_access(list, 3);
			g = granted(seen, sizeof(seen));
			printf("actual: hipMemSetAccess([%d, %d, %d]): %s; then%s\n", list[0],
			       list[1], list[2], hipGetErrorName(e), seen);
			broken += g > 0;
			unread += g < 0;
			OK(hipMemUnmap(va, size));
		}
	OK(hipMemMap(va, size, 0, h, 0));
	OK(set_access((const int[]){ 0, 1 }, 2));
	g = granted(seen, sizeof(seen));
	printf("control: hipMemSetAccess([0, 1]): hipSuccess; then%s\n", seen);
	OK(hipMemUnmap(va, size));
	OK(hipMemAddressFree(va, size));
	OK(hipMemRelease(h));
	if (broken)
		return printf("the prediction holds: %d of 6 calls left a device granted\n",
			      broken), 1;
	if (unread || g < 2)
		return printf("cannot check: hipMemGetAccess does not show the grants\n"), 2;
	return 0;
}
