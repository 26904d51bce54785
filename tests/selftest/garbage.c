// SPDX-License-Identifier: MIT
/*
 * A binary that lists subtests but ignores the protocol when running them:
 * the runner must report it, never crash on it.
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--list-subtests") == 0) {
		puts("noise");
		puts("silent");
		return 0;
	}
	if (argc > 2 && strcmp(argv[2], "noise") == 0) {
		puts("Subtest?? noise: MAYBE");
		puts("\x01\x02 binary junk \xff\xfe");
		fputs("Starting subtest: but never finishing", stdout);
	}
	return 0;
}
