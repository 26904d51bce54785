// SPDX-License-Identifier: MIT
#include "gc_amdgpu.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* `card0`, `card12`: a DRM minor; `card0-DP-1` is a connector of it. */
static bool is_card(const char *name)
{
	const char *p = name + 4;

	if (strncmp(name, "card", 4) != 0 || !*p)
		return false;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

/* drm_dir/card/device/driver -> .../drivers/amdgpu */
static bool driven_by_amdgpu(const char *drm_dir, const char *card)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s/device/driver", drm_dir, card);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	base = strrchr(target, '/');
	return strcmp(base ? base + 1 : target, "amdgpu") == 0;
}

static void append_name(char *names, size_t len, size_t *used, const char *name)
{
	int n;

	if (!names || !len || *used + 1 >= len)
		return;
	n = snprintf(names + *used, len - *used, "%s%s", *used ? " " : "", name);
	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

int gc_amdgpu_cards(const char *drm_dir, char *names, size_t len)
{
	DIR *d = opendir(drm_dir);
	struct dirent *e;
	size_t used = 0;
	int count = 0;

	if (names && len)
		names[0] = '\0';
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (!is_card(e->d_name) || !driven_by_amdgpu(drm_dir, e->d_name))
			continue;
		count++;
		append_name(names, len, &used, e->d_name);
	}
	closedir(d);
	return count;
}

const char *gc_amdgpu_clause(const char *drm_dir, int *n, char *buf, size_t len)
{
	char names[256];

	*n = gc_amdgpu_cards(drm_dir, names, sizeof(names));
	if (*n < 0)
		snprintf(buf, len, "%s: %s", drm_dir, strerror(-*n));
	else if (*n == 0)
		snprintf(buf, len, "no amdgpu device under %s", drm_dir);
	else
		snprintf(buf, len, "amdgpu drives %s", names);
	return buf;
}

const char *gc_amdgpu_bdf(uint64_t bdfid, char *buf, size_t len)
{
	unsigned part = (unsigned)(bdfid >> 28) & 0xf;
	int n = snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned)(bdfid >> 32),
			 (unsigned)(bdfid >> 8) & 0xff, (unsigned)(bdfid >> 3) & 0x1f,
			 (unsigned)bdfid & 0x7);

	if (part && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "/p%u", part);
	return buf;
}

const char *gc_amdgpu_code_name(const struct gc_amdgpu_code *names, size_t n, uint32_t r,
				const char *type, char *buf, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (names[i].code == r) {
			snprintf(buf, len, "%s", names[i].name);
			return buf;
		}
	snprintf(buf, len, "%s %u", type, (unsigned)r);
	return buf;
}

const char *gc_amdgpu_status_text(const char *name, const char *words, char *buf, size_t len)
{
	if (!words || !*words)
		snprintf(buf, len, "%s", name);
	else if (strncmp(words, name, strlen(name)) == 0)
		snprintf(buf, len, "%s", words);
	else
		snprintf(buf, len, "%s (%s)", name, words);
	return buf;
}
