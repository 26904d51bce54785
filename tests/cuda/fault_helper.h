/* SPDX-License-Identifier: MIT */
/*
 * cuda_fault_helper's exit statuses, shared with the test that execs it
 * (cuda_mem@read-only-fault).
 */
#ifndef GPUCONFORM_CUDA_FAULT_HELPER_H
#define GPUCONFORM_CUDA_FAULT_HELPER_H

#define FAULT_HELPER_NAME "cuda_fault_helper"

#define FAULT_HELPER_FAULTED 0 /* the write through the read-only mapping faulted */
#define FAULT_HELPER_WROTE 1   /* the write succeeded: read-only was not enforced */
#define FAULT_HELPER_ERROR 2   /* anything else: setup failed, the read failed, another error */

#endif
