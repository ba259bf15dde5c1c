/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzz target over files and directories of inputs without
 * libFuzzer, so that any compiler (and the sanitizer builds of the normal
 * test suite) replays the seed corpus and every crasher ever committed.
 *
 * usage: TARGET-replay PATH...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int runs;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = malloc(cap);
	size_t got;
	while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	if (!b)
		exit(1);
	LLVMFuzzerTestOneInput(b, n);
	free(b);
	runs++;
}

static void run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		perror(path);
		exit(1);
	}
	if (!S_ISDIR(st.st_mode)) {
		run_file(path);
		return;
	}
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		run_path(p);
	}
	if (d)
		closedir(d);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	printf("replayed %d inputs\n", runs);
	return runs ? 0 : 1;
}
