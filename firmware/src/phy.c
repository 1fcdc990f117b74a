#include "phy.h"

#include "ackfilter_regs.h"
#include "hal.h"
#include "print.h"

#define FIELD(word, name, v) \
    (((v) >> ACKFILTER_##word##_##name##_LSB) & ((1u << ACKFILTER_##word##_##name##_WIDTH) - 1u))

/* A frame takes 26 us at 2.5 MHz, waiting behind the poller's frame under
 * way about as long: 5 ms is far beyond either. */
#define FRAME_TIMEOUT_MS 5u
/* The poller reads both PHYs in about 0.4 ms. */
#define POLL_TIMEOUT_MS 20u

/* Whether `ms` milliseconds have passed since `t0` (the timer's low word: the
   waits here are far shorter than its 85 s wrap at 50 MHz). */
static int passed(uint32_t t0, uint32_t ms)
{
    return (uint32_t)timer_cycles() - t0 > ms * (ACKFILTER_F_SYS_HZ / 1000u);
}

/* Whether phy_setup saw the poller finish a round (1 until it has looked). */
static int mdio_present = 1;

enum phy_result phy_mdio(unsigned phy, unsigned reg, int write, uint16_t *value)
{
    if (!mdio_present)
        return PHY_NO_MDIO;
    uint32_t t0 = (uint32_t)timer_cycles();
    uint32_t r;
    while (FIELD(MDIO_RESULT, BUSY, r = csr_read(ACKFILTER_BOARD_MDIO_RESULT)))
        if (passed(t0, FRAME_TIMEOUT_MS))
            return PHY_TIMEOUT;
    uint32_t done = FIELD(MDIO_RESULT, DONE, r);
    csr_write(ACKFILTER_BOARD_MDIO_COMMAND,
              (uint32_t)(write ? *value : 0u) << ACKFILTER_MDIO_COMMAND_DATA_LSB |
              (uint32_t)(reg & 31u) << ACKFILTER_MDIO_COMMAND_REG_LSB |
              (uint32_t)(phy & 31u) << ACKFILTER_MDIO_COMMAND_PHY_LSB |
              (uint32_t)(write != 0) << ACKFILTER_MDIO_COMMAND_WRITE_LSB);
    while (FIELD(MDIO_RESULT, DONE, r = csr_read(ACKFILTER_BOARD_MDIO_RESULT)) == done)
        if (passed(t0, FRAME_TIMEOUT_MS))
            return PHY_TIMEOUT;
    if (write)
        return PHY_OK;
    if (FIELD(MDIO_RESULT, NO_PHY, r))
        return PHY_NO_PHY;
    *value = (uint16_t)FIELD(MDIO_RESULT, DATA, r);
    return PHY_OK;
}

/* Register `reg` of the selected page: (value & ~clear) | set. */
static enum phy_result modify(unsigned phy, unsigned reg, uint16_t clear, uint16_t set)
{
    uint16_t v;
    enum phy_result e = phy_mdio(phy, reg, 0, &v);
    if (e != PHY_OK)
        return e;
    v = (uint16_t)((v & ~clear) | set);
    return phy_mdio(phy, reg, 1, &v);
}

void phy_setup(void)
{
    static const uint32_t status[2] = {ACKFILTER_BOARD_PHY0_STATUS, ACKFILTER_BOARD_PHY1_STATUS};
    static const uint32_t ids[2] = {ACKFILTER_BOARD_PHY0_ID, ACKFILTER_BOARD_PHY1_ID};
    uint32_t t0 = (uint32_t)timer_cycles();
    for (unsigned n = 0; n < 2; n++)
        while (FIELD(PHY, POLLS, csr_read(status[n])) == 0 && !passed(t0, POLL_TIMEOUT_MS))
            ;
    mdio_present = FIELD(PHY, POLLS, csr_read(status[0]) | csr_read(status[1])) != 0;
    for (unsigned n = 0; n < 2; n++) {
        if (!FIELD(PHY, PRESENT, csr_read(status[n])) ||
            (csr_read(ids[n]) & PHY_ID_REVISION_MASK) != PHY_ID_RTL8211F)
            continue;
        /* Linux drivers/net/phy/realtek.c: page 0xd08, reg 0x11 bit 8 TX
           delay, reg 0x15 bit 3 RX delay; then the page register back. */
        uint16_t page, d08 = 0xd08;
        enum phy_result e = phy_mdio(n, 0x1f, 0, &page);
        if (e == PHY_OK && (e = phy_mdio(n, 0x1f, 1, &d08)) == PHY_OK &&
            (e = modify(n, 0x11, 0, 1u << 8)) == PHY_OK && (e = modify(n, 0x15, 1u << 3, 0)) == PHY_OK)
            e = phy_mdio(n, 0x1f, 1, &page);
        put_str("phy ");
        put_u64(n);
        put_str(e == PHY_OK ? ": RTL8211F, RGMII delays set" : ": RTL8211F, delays NOT set");
        put_nl();
    }
}
