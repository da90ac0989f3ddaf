/*
 * A stand-in for Windows' bcryptprimitives.dll, for running fbunload under
 * Wine 8, which lacks it. Rust's standard library (1.78 and later) imports
 * ProcessPrng from it for random numbers (hash map seeds, temporary names);
 * Windows 10 and later have the real DLL, so this is never shipped.
 * It answers with the system's preferred generator through bcrypt.dll,
 * which Wine has.
 */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
