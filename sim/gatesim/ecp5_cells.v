// The ECP5 logic cells a synth_ecp5 netlist uses, for `make gatesim`
// (ackfilter.sim.gatesim): LUT4 and LUT2, the PFUMX and L6MUX21 muxes,
// TRELLIS_FF and TRELLIS_DPR16X4 (LUT RAM) written here, CCU2C (the carry
// chain) from Yosys's own library (share/ecp5, on the include path). Ports
// and parameters as Yosys's cells. Yosys's library models every
// flip-flop's clock through a wire of its own (`muxclk`), which gives the
// simulator thousands of clocks to watch; here the polarity is chosen when
// the cell is elaborated, so that every flip-flop on a net shares its
// clock. DP16KD and MULT18X18D are in their own files.

`include "ccu2c_sim.vh"

// A 4-input LUT: Z is INIT's bit number DCBA.
module LUT4(input A, B, C, D, output Z);
	parameter [15:0] INIT = 16'h0000;
	assign Z = INIT[{D, C, B, A}];
endmodule

module LUT2(input A, B, output Z);
	parameter [3:0] INIT = 4'h0;
	assign Z = INIT[{B, A}];
endmodule

module PFUMX(input ALUT, BLUT, C0, output Z);
	assign Z = C0 ? ALUT : BLUT;
endmodule

module L6MUX21(input D0, D1, SD, output Z);
	assign Z = SD ? D1 : D0;
endmodule

// The slice flip-flop. LSR (set/reset) wins over CE in LSR_OVER_CE mode
// and acts at once in ASYNC mode; it loads REGSET's value (or M, LSRMODE
// PRLD). The configuration (GSR) loads REGSET's value too.
module TRELLIS_FF(input CLK, LSR, CE, DI, M, output reg Q);
	parameter GSR = "ENABLED";
	parameter CEMUX = "1";
	parameter CLKMUX = "CLK";
	parameter LSRMUX = "LSR";
	parameter SRMODE = "LSR_OVER_CE";
	parameter REGSET = "RESET";
	parameter LSRMODE = "LSR";

	wire ce = (CEMUX == "1") ? 1'b1 : (CEMUX == "0") ? 1'b0 : (CEMUX == "INV") ? ~CE : CE;
	wire lsr = (LSRMUX == "INV") ? ~LSR : LSR;
	wire srval = (LSRMODE == "PRLD") ? M : (REGSET == "SET");
	initial Q = (REGSET == "SET");

	generate
		if (SRMODE == "ASYNC" && CLKMUX == "INV") begin : async_neg
			always @(negedge CLK or posedge lsr)
				if (lsr) Q <= srval; else if (ce) Q <= DI;
		end else if (SRMODE == "ASYNC") begin : async_pos
			always @(posedge CLK or posedge lsr)
				if (lsr) Q <= srval; else if (ce) Q <= DI;
		end else if (CLKMUX == "INV") begin : sync_neg
			always @(negedge CLK)
				if (lsr) Q <= srval; else if (ce) Q <= DI;
		end else begin : sync_pos
			always @(posedge CLK)
				if (lsr) Q <= srval; else if (ce) Q <= DI;
		end
	endgenerate
endmodule

// 16 x 4 LUT RAM: a synchronous write port, an asynchronous read port.
module TRELLIS_DPR16X4(input [3:0] DI, input [3:0] WAD, input WRE, input WCK, input [3:0] RAD,
                       output [3:0] DO);
	parameter WCKMUX = "WCK";
	parameter WREMUX = "WRE";
	parameter [63:0] INITVAL = 64'h0;

	reg [3:0] mem [0:15];
	integer i;
	initial for (i = 0; i < 16; i = i + 1) mem[i] = INITVAL[4 * i +: 4];

	wire we = (WREMUX == "1") ? 1'b1 : (WREMUX == "0") ? 1'b0 : (WREMUX == "INV") ? ~WRE : WRE;
	generate
		if (WCKMUX == "INV") begin : neg
			always @(negedge WCK) if (we) mem[WAD] <= DI;
		end else begin : pos
			always @(posedge WCK) if (we) mem[WAD] <= DI;
		end
	endgenerate
	assign DO = mem[RAD];
endmodule
