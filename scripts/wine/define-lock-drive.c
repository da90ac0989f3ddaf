/*
 * Makes QueryDosDevice("L:") answer "\??\L:" under Wine, for the Windows
 * Firebird engine's shared-memory check (see scripts/wine-smoke.sh).
 *
 * Firebird maps its lock files (fb50_trace, the lock table) into memory,
 * then asks GetMappedFileName which file it got and turns the answer back
 * into a drive path with QueryDosDevice, expecting "\Device\HarddiskVolumeN"
 * from both, as Windows gives. Wine 8 answers GetMappedFileName with
 * "\??\L:\..." instead, which matches no drive, and the engine refuses
 * with "Wrong file for memory mapping". A drive whose DOS device is
 * defined as "\??\L:" itself makes the two answers agree.
 *
 * Usage: define-lock-drive.exe L:
 */
#include <windows.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char target[MAX_PATH];
    char answer[MAX_PATH];
    if (argc != 2) {
        fprintf(stderr, "usage: define-lock-drive.exe L:\n");
        return 2;
    }
    snprintf(target, sizeof target, "\\??\\%s", argv[1]);
    if (!DefineDosDeviceA(DDD_RAW_TARGET_PATH, argv[1], target)) {
        fprintf(stderr, "DefineDosDevice(%s, %s) failed: error %lu\n", argv[1], target,
                GetLastError());
        return 1;
    }
    if (!QueryDosDeviceA(argv[1], answer, sizeof answer) || strcmp(answer, target) != 0) {
        fprintf(stderr, "QueryDosDevice(%s) does not answer %s\n", argv[1], target);
        return 1;
    }
    return 0;
}
