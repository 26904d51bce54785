/*
 * hip_mem@map-past-reservation, predicted from the source (not yet seen on
 * hardware): hipMemMap maps a range that starts inside a reservation and runs
 * past its end, into free VA or into the next reservation.
 *
 * cc -std=c11 -O2 -Wall -Wextra -D__HIP_PLATFORM_AMD__ -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lamdhip64
 *
 * hip_runtime_api.h, hipMemMap: "@brief Maps an allocation handle to a
 * reserved virtual address range." [src ROCm/HIP
 * include/hip/hip_runtime_api.h @ rocm-5.2.3] A range that runs past its
 * reservation is not a reserved range: the map must be refused, whether the
 * VA after it is free or another reservation (two reservations are not one).
 *
 * The prediction: hipMemMap refuses only `ptr == nullptr || handle ==
 * nullptr || size == 0 || offset != 0 || flags != 0`, then queues the
 * VirtualMapCommand and returns hipSuccess [src ROCm/clr
 * hipamd/src/hip_vm.cpp @ f9f995c6d0ae]: no reservation bound is checked.
 *
 * As the suite's hip_mem does it, on device 0, g the minimum granularity: a
 * handle of 2g, a reservation of 4g at va and one of 2g asked for at va + 4g
 * (freed again for the free-VA case), then hipMemMap([va + 3g, va + 5g)).
 * Exit 1: a map past the end succeeded (the prediction); 0: both refused;
 * 2: cannot check (no AMD GPU, no VMM, a setup call failed).
 */
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define OK(call) do { hipError_t e_ = (call); if (e_ != hipSuccess) { \
	printf("cannot check: %s: %s\n", #call, hipGetErrorName(e_)); exit(2); } } while (0)

static hipMemAllocationProp prop; /* pinned device memory on device 0, as the suite's */
static size_t g;

/* One case: 1 when the map past the end was accepted. */
static int past_end(int next_reserved)
{
	hipMemGenericAllocationHandle_t h;
	char *va = NULL, *next = NULL;
	hipError_t e;

	OK(hipMemCreate(&h, 2 * g, &prop, 0));
	OK(hipMemAddressReserve((void **)&va, 4 * g, 0, NULL, 0));
	OK(hipMemAddressReserve((void **)&next, 2 * g, 0, va + 4 * g, 0));
	if (next != va + 4 * g) {
		printf("cannot check: the second reservation came at %p, not right after the "
		       "first (%p)\n", (void *)next, (void *)(va + 4 * g));
		exit(2);
	}
	if (!next_reserved)
		OK(hipMemAddressFree(next, 2 * g));
	e = hipMemMap(va + 3 * g, 2 * g, 0, h, 0);
	printf("actual: hipMemMap([va + 3g, va + 5g)) over a 4g reservation, %s after it: %s\n",
	       next_reserved ? "another reservation" : "free VA", hipGetErrorName(e));
	if (e == hipSuccess)
		OK(hipMemUnmap(va + 3 * g, 2 * g));
	if (next_reserved)
		OK(hipMemAddressFree(next, 2 * g));
	OK(hipMemAddressFree(va, 4 * g));
	OK(hipMemRelease(h));
	return e == hipSuccess;
}

int main(void)
{
	int n = 0, accepted;
	hipError_t e = hipGetDeviceCount(&n);

	if (e != hipSuccess || n < 1) {
		printf("cannot check: no AMD GPU (hipGetDeviceCount: %s, %d devices)\n",
		       hipGetErrorName(e), n);
		return 2;
	}
	OK(hipSetDevice(0));
	prop.type = hipMemAllocationTypePinned;
	prop.requestedHandleType = hipMemHandleTypeNone;
	prop.location.type = hipMemLocationTypeDevice;
	prop.location.id = 0;
	e = hipMemGetAllocationGranularity(&g, &prop, hipMemAllocationGranularityMinimum);
	if (e != hipSuccess) {
		printf("cannot check: hipMemGetAllocationGranularity: %s (no VMM on gpu0?)\n",
		       hipGetErrorName(e));
		return 2;
	}
	printf("expected: both maps refused (hipErrorInvalidValue or hipErrorNotSupported, "
	       "the codes listed); granularity %zu\n", g);
	accepted = past_end(0);
	accepted += past_end(1);
	if (accepted)
		printf("the prediction holds: %d of 2 maps past the reservation's end went "
		       "through\n", accepted);
	return accepted ? 1 : 0;
}
