/* kdump/_speedups.c's CRC-32C on the processor's instructions against its own table-driven
 * code, built for another architecture and run under an emulator (tests/test_crc_armv8.py):
 * lengths and alignments across every loop of crc_hw, crc_hw3 and tail_hw, and the check
 * value of CRC-32C ("123456789" -> 0xE3069283, RFC 3720 B.4). Prints the instructions' name,
 * the check value and the number of mismatches; exits 0 when all agree. Only the CRC code is
 * called: the Python C API the file also uses is left unresolved in the static link. */
#include "_speedups.c"

static uint8_t buf[70000];

int main(void)
{
    crc_init();
    hw_crc_usable = hw_crc_present();
    if (!hw_crc_usable) {
        puts("no CRC instructions");
        return 2;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 24);
    }
    static const size_t lens[] = {0,   1,   3,    7,    8,     9,     21,    100,  127,
                                  255, 256, 257, 1000, 4096, 16384, 65536, 69000};
    const size_t n = sizeof lens / sizeof lens[0];
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t off = 0; off < 8; off++) {
            const uint8_t *p[3] = {buf + off, buf + 3 + i, buf + 7};
            size_t len[3] = {lens[i], lens[(i + 1) % n] / 2, lens[(i + 5) % n] / 3};
            uint32_t hw, sw, hw3[3], sw3[3];
            have_hw_crc = 1;
            hw = crc32c(p[0], len[0]);
            crc32c_3(p, len, hw3);
            have_hw_crc = 0;
            sw = crc32c(p[0], len[0]);
            crc32c_3(p, len, sw3);
            bad += (hw != sw) + (memcmp(hw3, sw3, sizeof hw3) != 0);
        }
    have_hw_crc = 1;
    uint32_t check = crc32c((const uint8_t *)"123456789", 9);
    printf("%s %08x %d\n", HW_CRC_BUILT, check, bad);
    return bad != 0 || check != 0xE3069283u;
}
