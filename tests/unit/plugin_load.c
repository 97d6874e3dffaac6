/*
 * plugin_load - dlopen Slurm's libslurmfull, then each gpupool plugin, as a
 * Slurm command (sshare, sprio) does outside slurmctld, but with RTLD_NOW
 * so that every symbol, function or data, must resolve at once.
 *
 *   usage: plugin_load LIBSLURMFULL PLUGIN.so...
 * Exit 0 when every plugin loads; 1 (naming the plugin and the symbol)
 * otherwise.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int failed = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s LIBSLURMFULL PLUGIN.so...\n", argv[0]);
		return 2;
	}
	if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "plugin_load: %s\n", dlerror());
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL)) {
			printf("ok: %s\n", argv[i]);
		} else {
			printf("FAIL: %s\n", dlerror());
			failed = 1;
		}
	}
	return failed;
}
