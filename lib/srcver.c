// SPDX-License-Identifier: MIT
#include "srcver.h"

#include <errno.h>
#include <stdlib.h>

int gc_kernel_release_parse(const char *release, unsigned *major, unsigned *minor)
{
	unsigned long ma, mi;
	char *end;

	if (!release || *release < '0' || *release > '9')
		return -EINVAL;
	ma = strtoul(release, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return -EINVAL;
	mi = strtoul(end + 1, &end, 10);
	if (ma > 1000 || mi > 1000)
		return -EINVAL;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

struct gc_svm_gran_rule gc_svm_granularity_rule(unsigned major, unsigned minor, unsigned value)
{
	struct gc_svm_gran_rule r = {
		.clamped = value < 0x3F ? value : 0x3F,
		.as_given = value & 0xFF,
	};
	bool clamp_mainline = major > 6 || (major == 6 && minor >= 7);

	r.either = !clamp_mainline;
	r.why = clamp_mainline ?
		"6.7 or later: mainline clamps to 0x3F (282c1d793076)" :
		"before 6.7: clamped where the stable backport of 282c1d793076 is in, else as given";
	return r;
}

struct gc_amdsmi_count_rule gc_amdsmi_count_rule(unsigned major, unsigned minor,
						 unsigned release)
{
	unsigned long v = (unsigned long)major * 1000000ul + (unsigned long)minor * 1000ul +
			  (release < 1000 ? release : 999);

	if (major <= 24)
		return (struct gc_amdsmi_count_rule){ GC_AMDSMI_COUNT_NONE,
			"24.x and before (read: rocm-5.5.0 to 24.7.0): a bool, no count" };
	if (minor >= 1000 || v < 26002001ul)
		return (struct gc_amdsmi_count_rule){ GC_AMDSMI_COUNT_UNKNOWN,
			"between 24.7.0 (a bool) and 26.2.1 (a count): no source of this "
			"version read" };
	return (struct gc_amdsmi_count_rule){ GC_AMDSMI_COUNT_UNLOCKED,
		"26.2.1 on (read: 26.2.1, 27.1.0): a count, without a lock around "
		"init / cleanup" };
}
