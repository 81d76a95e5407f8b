/* Runs the fuzz target over files (the kept corpus and past crashes): a regression test that
 * needs no clang. Usage: fuzz_replay FILE_OR_DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "no such file or directory: %s\n", argv[i]);
            bad++;
            continue;
        }
        if (S_ISDIR(sb.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                bad += run_file(p);
                files++;
            }
            if (d)
                closedir(d);
        } else {
            bad += run_file(argv[i]);
            files++;
        }
    }
    printf("%d passed, %d failed\n", files - bad, bad);
    return bad ? 1 : 0;
}
