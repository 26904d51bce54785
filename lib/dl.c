/* SPDX-License-Identifier: MIT */
#include "dl.h"

#include <dlfcn.h>
#include <stdio.h>

void *gc_dlopen_first(const char *const *names, size_t n, int flags, char *soname,
		      size_t soname_len, char *why, size_t why_len)
{
	for (size_t i = 0; i < n; i++) {
		void *lib = dlopen(names[i], flags);

		if (lib) {
			snprintf(soname, soname_len, "%s", names[i]);
			return lib;
		}
		if (i == 0)
			snprintf(why, why_len, "%s", dlerror());
	}
	return NULL;
}
