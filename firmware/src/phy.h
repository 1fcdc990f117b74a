/* The PHYs over the board's MDIO port (ACKFILTER_BOARD_MDIO_COMMAND and
 * _RESULT): one clause-22 frame on request, sent by the gateware's poller
 * between its own reads; and the setup of PHYs whose power-on RGMII delays
 * differ from what the FPGA expects. */
#ifndef PHY_H
#define PHY_H

#include <stdint.h>

/* PHY_NO_MDIO: the poller never finished a round by the end of phy_setup,
 * so this build has no board registers (the SoC's simulation). */
enum phy_result { PHY_OK = 0, PHY_NO_PHY = -1, PHY_TIMEOUT = -2, PHY_NO_MDIO = -3 };

/* One frame: a read (`write` 0; the register's value in *value) or a write
 * of *value, to register `reg` of the PHY at MDIO address `phy`. */
enum phy_result phy_mdio(unsigned phy, unsigned reg, int write, uint16_t *value);

/* At boot: once the poller has read both PHYs, give every Realtek RTL8211F
 * the RGMII delays the FPGA expects (TX clock delay in the PHY, RX data
 * delayed in the FPGA): page 0xd08 register 0x11 bit 8 set, register 0x15
 * bit 3 clear, whatever its straps chose. Prints a line per PHY set up. */
void phy_setup(void);

/* The RTL8211F's PHY identifier (registers 2 and 3), its revision nibble clear. */
#define PHY_ID_RTL8211F 0x001cc910u
#define PHY_ID_REVISION_MASK 0xfffffff0u

#endif
