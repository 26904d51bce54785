// SPDX-License-Identifier: MIT
#include "devfd.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void append(char *buf, size_t len, size_t *used, const char *fd, const char *target)
{
	int n;

	if (!buf || !len || *used >= len)
		return;
	n = snprintf(buf + *used, len - *used, "%s%s:%s", *used ? " " : "", fd, target);
	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

int gc_devfd_list(const char *prefix, char *buf, size_t len)
{
	DIR *d = opendir("/proc/self/fd");
	size_t used = 0, plen = strlen(prefix);
	struct dirent *e;
	int count = 0;

	if (buf && len)
		buf[0] = '\0';
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char link[320], target[PATH_MAX];
		ssize_t n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue; /* closed meanwhile */
		target[n] = '\0';
		if (strncmp(target, prefix, plen) != 0)
			continue;
		count++;
		append(buf, len, &used, e->d_name, target);
	}
	closedir(d);
	return count;
}

int gc_devfd_count(const char *prefix)
{
	return gc_devfd_list(prefix, NULL, 0);
}
