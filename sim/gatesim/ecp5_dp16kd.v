// Behavioural models of the two ECP5 cells Yosys's own simulation models
// (share/ecp5/cells_sim.v) leave empty or out: the DP16KD block RAM and the
// MULT18X18D multiplier, for `make gatesim` (ackfilter.sim.gatesim). Ports
// and parameters as in Yosys's cells_bb.v; behaviour as Lattice documents it
// for the ECP5 (TN1264, "ECP5 and ECP5-5G Memory Usage Guide"; TN1267, "sysDSP").
//
// DP16KD: 18 Kbit as 1024 rows of 18 bits. Per port, DATA_WIDTH selects the
// address bits (x1: AD[13:0], x2: AD[13:1], x4: AD[13:2], x9: AD[13:3],
// x18: AD[13:4] with AD[1:0] the two 9-bit byte enables). x36 is the
// pseudo-dual-port mode: port A writes {DIB, DIA} at AD[13:5] with
// ADA[3:0] the four byte enables, port B reads {DOB, DOA}. x9 keeps row
// bits [8:0] (AD[3] = 0) or [17:9]; x1-x4 use the row's 16 data bits
// {row[16:9], row[7:0]} (which of them a port's address picks matters
// only for INITVAL and for ports of different widths: this model refuses
// the latter). On a clock edge with CE and CS = CSDECODE: a write stores the
// enabled bytes and the output shows, by WRITEMODE, the old word
// (READBEFOREWRITE), the written one (WRITETHROUGH) or keeps its value
// (NORMAL); a read shows the addressed word. RST clears the output (RESETMODE
// SYNC; the asynchronous mode is modelled at the edge too); REGMODE OUTREG adds the output
// register, loaded when OCE. INITVAL_xx holds rows 16xx..16xx+15, 20 bits
// each, 18 used (Yosys's init_slice).
//
// A read of the word the other port writes at the same edge has no defined
// result in the hardware: the model reads the bytes being written inverted
// (a 2-state simulator has no X; the bytes not written read as they are),
// so that a design that uses such a read fails its tests here, and says so
// once per instance. Yosys's own bypass logic, where it emulates a read
// port's behaviour, is what must make such reads harmless.

module DP16KD(DIA0, DIA1, DIA2, DIA3, DIA4, DIA5, DIA6, DIA7, DIA8, DIA9, DIA10, DIA11, DIA12, DIA13, DIA14, DIA15, DIA16, DIA17, ADA0, ADA1, ADA2, ADA3, ADA4, ADA5, ADA6, ADA7, ADA8, ADA9, ADA10, ADA11, ADA12, ADA13, CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0, DIB0, DIB1, DIB2, DIB3, DIB4, DIB5, DIB6, DIB7, DIB8, DIB9, DIB10, DIB11, DIB12, DIB13, DIB14, DIB15, DIB16, DIB17, ADB0, ADB1, ADB2, ADB3, ADB4, ADB5, ADB6, ADB7, ADB8, ADB9, ADB10, ADB11, ADB12, ADB13, CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0, DOA0, DOA1, DOA2, DOA3, DOA4, DOA5, DOA6, DOA7, DOA8, DOA9, DOA10, DOA11, DOA12, DOA13, DOA14, DOA15, DOA16, DOA17, DOB0, DOB1, DOB2, DOB3, DOB4, DOB5, DOB6, DOB7, DOB8, DOB9, DOB10, DOB11, DOB12, DOB13, DOB14, DOB15, DOB16, DOB17);
	input DIA0, DIA1, DIA2, DIA3, DIA4, DIA5, DIA6, DIA7, DIA8, DIA9, DIA10, DIA11, DIA12, DIA13, DIA14, DIA15, DIA16, DIA17, ADA0, ADA1, ADA2, ADA3, ADA4, ADA5, ADA6, ADA7, ADA8, ADA9, ADA10, ADA11, ADA12, ADA13, CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0, DIB0, DIB1, DIB2, DIB3, DIB4, DIB5, DIB6, DIB7, DIB8, DIB9, DIB10, DIB11, DIB12, DIB13, DIB14, DIB15, DIB16, DIB17, ADB0, ADB1, ADB2, ADB3, ADB4, ADB5, ADB6, ADB7, ADB8, ADB9, ADB10, ADB11, ADB12, ADB13, CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0;
	output DOA0, DOA1, DOA2, DOA3, DOA4, DOA5, DOA6, DOA7, DOA8, DOA9, DOA10, DOA11, DOA12, DOA13, DOA14, DOA15, DOA16, DOA17, DOB0, DOB1, DOB2, DOB3, DOB4, DOB5, DOB6, DOB7, DOB8, DOB9, DOB10, DOB11, DOB12, DOB13, DOB14, DOB15, DOB16, DOB17;
	parameter DATA_WIDTH_A = 18;
	parameter DATA_WIDTH_B = 18;
	parameter REGMODE_A = "NOREG";
	parameter REGMODE_B = "NOREG";
	parameter RESETMODE = "SYNC";
	parameter ASYNC_RESET_RELEASE = "SYNC";
	parameter CSDECODE_A = "0b000";
	parameter CSDECODE_B = "0b000";
	parameter WRITEMODE_A = "NORMAL";
	parameter WRITEMODE_B = "NORMAL";
	parameter CLKAMUX = "CLKA";
	parameter CLKBMUX = "CLKB";
	parameter GSR = "ENABLED";
	parameter INIT_DATA = "STATIC";
	parameter [319:0] INITVAL_00 = 320'h0;
	parameter [319:0] INITVAL_01 = 320'h0;
	parameter [319:0] INITVAL_02 = 320'h0;
	parameter [319:0] INITVAL_03 = 320'h0;
	parameter [319:0] INITVAL_04 = 320'h0;
	parameter [319:0] INITVAL_05 = 320'h0;
	parameter [319:0] INITVAL_06 = 320'h0;
	parameter [319:0] INITVAL_07 = 320'h0;
	parameter [319:0] INITVAL_08 = 320'h0;
	parameter [319:0] INITVAL_09 = 320'h0;
	parameter [319:0] INITVAL_0A = 320'h0;
	parameter [319:0] INITVAL_0B = 320'h0;
	parameter [319:0] INITVAL_0C = 320'h0;
	parameter [319:0] INITVAL_0D = 320'h0;
	parameter [319:0] INITVAL_0E = 320'h0;
	parameter [319:0] INITVAL_0F = 320'h0;
	parameter [319:0] INITVAL_10 = 320'h0;
	parameter [319:0] INITVAL_11 = 320'h0;
	parameter [319:0] INITVAL_12 = 320'h0;
	parameter [319:0] INITVAL_13 = 320'h0;
	parameter [319:0] INITVAL_14 = 320'h0;
	parameter [319:0] INITVAL_15 = 320'h0;
	parameter [319:0] INITVAL_16 = 320'h0;
	parameter [319:0] INITVAL_17 = 320'h0;
	parameter [319:0] INITVAL_18 = 320'h0;
	parameter [319:0] INITVAL_19 = 320'h0;
	parameter [319:0] INITVAL_1A = 320'h0;
	parameter [319:0] INITVAL_1B = 320'h0;
	parameter [319:0] INITVAL_1C = 320'h0;
	parameter [319:0] INITVAL_1D = 320'h0;
	parameter [319:0] INITVAL_1E = 320'h0;
	parameter [319:0] INITVAL_1F = 320'h0;
	parameter [319:0] INITVAL_20 = 320'h0;
	parameter [319:0] INITVAL_21 = 320'h0;
	parameter [319:0] INITVAL_22 = 320'h0;
	parameter [319:0] INITVAL_23 = 320'h0;
	parameter [319:0] INITVAL_24 = 320'h0;
	parameter [319:0] INITVAL_25 = 320'h0;
	parameter [319:0] INITVAL_26 = 320'h0;
	parameter [319:0] INITVAL_27 = 320'h0;
	parameter [319:0] INITVAL_28 = 320'h0;
	parameter [319:0] INITVAL_29 = 320'h0;
	parameter [319:0] INITVAL_2A = 320'h0;
	parameter [319:0] INITVAL_2B = 320'h0;
	parameter [319:0] INITVAL_2C = 320'h0;
	parameter [319:0] INITVAL_2D = 320'h0;
	parameter [319:0] INITVAL_2E = 320'h0;
	parameter [319:0] INITVAL_2F = 320'h0;
	parameter [319:0] INITVAL_30 = 320'h0;
	parameter [319:0] INITVAL_31 = 320'h0;
	parameter [319:0] INITVAL_32 = 320'h0;
	parameter [319:0] INITVAL_33 = 320'h0;
	parameter [319:0] INITVAL_34 = 320'h0;
	parameter [319:0] INITVAL_35 = 320'h0;
	parameter [319:0] INITVAL_36 = 320'h0;
	parameter [319:0] INITVAL_37 = 320'h0;
	parameter [319:0] INITVAL_38 = 320'h0;
	parameter [319:0] INITVAL_39 = 320'h0;
	parameter [319:0] INITVAL_3A = 320'h0;
	parameter [319:0] INITVAL_3B = 320'h0;
	parameter [319:0] INITVAL_3C = 320'h0;
	parameter [319:0] INITVAL_3D = 320'h0;
	parameter [319:0] INITVAL_3E = 320'h0;
	parameter [319:0] INITVAL_3F = 320'h0;

	reg [17:0] mem [0:1023];
	reg [17:0] doa_q = 18'b0, dob_q = 18'b0, doa_r = 18'b0, dob_r = 18'b0;
	// Inverted clocks (CLKAMUX, CLKBMUX "INV") are refused below: the
	// blocks run on the clock pins themselves, which Verilator then shares
	// with every other cell on the net.
	wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
	wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
	wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
	wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
	function [2:0] cs_of(input [39:0] decode);   // "0bXYZ" -> XYZ
		cs_of = {decode[16], decode[8], decode[0]};
	endfunction
	wire csa = {CSA2, CSA1, CSA0} == cs_of(CSDECODE_A);
	wire csb = {CSB2, CSB1, CSB0} == cs_of(CSDECODE_B);

	task load_initval(input [7:0] idx, input [319:0] v);
		integer i;
		for (i = 0; i < 16; i = i + 1) mem[idx * 16 + i] = v[i * 20 +: 18];
	endtask

	initial begin
		if (CLKAMUX == "INV" || CLKBMUX == "INV") begin
			$display("%%Error: DP16KD %m: inverted clocks are not modelled");
			$finish;
		end
		if (DATA_WIDTH_A != DATA_WIDTH_B) begin
			$display("%%Error: DP16KD %m: ports of different widths (%0d, %0d) are not modelled",
			         DATA_WIDTH_A, DATA_WIDTH_B);
			$finish;
		end
		load_initval(8'h00, INITVAL_00);
		load_initval(8'h01, INITVAL_01);
		load_initval(8'h02, INITVAL_02);
		load_initval(8'h03, INITVAL_03);
		load_initval(8'h04, INITVAL_04);
		load_initval(8'h05, INITVAL_05);
		load_initval(8'h06, INITVAL_06);
		load_initval(8'h07, INITVAL_07);
		load_initval(8'h08, INITVAL_08);
		load_initval(8'h09, INITVAL_09);
		load_initval(8'h0A, INITVAL_0A);
		load_initval(8'h0B, INITVAL_0B);
		load_initval(8'h0C, INITVAL_0C);
		load_initval(8'h0D, INITVAL_0D);
		load_initval(8'h0E, INITVAL_0E);
		load_initval(8'h0F, INITVAL_0F);
		load_initval(8'h10, INITVAL_10);
		load_initval(8'h11, INITVAL_11);
		load_initval(8'h12, INITVAL_12);
		load_initval(8'h13, INITVAL_13);
		load_initval(8'h14, INITVAL_14);
		load_initval(8'h15, INITVAL_15);
		load_initval(8'h16, INITVAL_16);
		load_initval(8'h17, INITVAL_17);
		load_initval(8'h18, INITVAL_18);
		load_initval(8'h19, INITVAL_19);
		load_initval(8'h1A, INITVAL_1A);
		load_initval(8'h1B, INITVAL_1B);
		load_initval(8'h1C, INITVAL_1C);
		load_initval(8'h1D, INITVAL_1D);
		load_initval(8'h1E, INITVAL_1E);
		load_initval(8'h1F, INITVAL_1F);
		load_initval(8'h20, INITVAL_20);
		load_initval(8'h21, INITVAL_21);
		load_initval(8'h22, INITVAL_22);
		load_initval(8'h23, INITVAL_23);
		load_initval(8'h24, INITVAL_24);
		load_initval(8'h25, INITVAL_25);
		load_initval(8'h26, INITVAL_26);
		load_initval(8'h27, INITVAL_27);
		load_initval(8'h28, INITVAL_28);
		load_initval(8'h29, INITVAL_29);
		load_initval(8'h2A, INITVAL_2A);
		load_initval(8'h2B, INITVAL_2B);
		load_initval(8'h2C, INITVAL_2C);
		load_initval(8'h2D, INITVAL_2D);
		load_initval(8'h2E, INITVAL_2E);
		load_initval(8'h2F, INITVAL_2F);
		load_initval(8'h30, INITVAL_30);
		load_initval(8'h31, INITVAL_31);
		load_initval(8'h32, INITVAL_32);
		load_initval(8'h33, INITVAL_33);
		load_initval(8'h34, INITVAL_34);
		load_initval(8'h35, INITVAL_35);
		load_initval(8'h36, INITVAL_36);
		load_initval(8'h37, INITVAL_37);
		load_initval(8'h38, INITVAL_38);
		load_initval(8'h39, INITVAL_39);
		load_initval(8'h3A, INITVAL_3A);
		load_initval(8'h3B, INITVAL_3B);
		load_initval(8'h3C, INITVAL_3C);
		load_initval(8'h3D, INITVAL_3D);
		load_initval(8'h3E, INITVAL_3E);
		load_initval(8'h3F, INITVAL_3F);
	end

	// The row a port's address selects, and the bit offset and width of its
	// word in it (x36: two rows, see wr36/rd36).
	function [9:0] row_of(input integer w, input [13:0] ad);
		row_of = (w == 36) ? {ad[13:5], 1'b0} : ad[13:4];
	endfunction
	// The 18-bit row with a narrow word written in; the enables of x18.
	function [17:0] put(input integer w, input [13:0] ad, input [17:0] row, input [17:0] d);
		reg [15:0] data;
		begin
			put = row;
			data = {row[16:9], row[7:0]};
			case (w)
				1: data[ad[3:0]] = d[0];
				2: data[ad[3:1] * 2 +: 2] = d[1:0];
				4: data[ad[3:2] * 4 +: 4] = d[3:0];
				default: ;
			endcase
			if (w <= 4) put = {1'b0, data[15:8], 1'b0, data[7:0]} | (row & 18'h20100);
			if (w == 9) begin
				if (ad[3]) put[17:9] = d[8:0]; else put[8:0] = d[8:0];
			end
			if (w == 18) begin
				if (ad[0]) put[8:0] = d[8:0];
				if (ad[1]) put[17:9] = d[17:9];
			end
		end
	endfunction
	function [17:0] get(input integer w, input [13:0] ad, input [17:0] row);
		reg [15:0] data;
		begin
			data = {row[16:9], row[7:0]};
			case (w)
				1: get = {17'b0, data[ad[3:0]]};
				2: get = {16'b0, data[ad[3:1] * 2 +: 2]};
				4: get = {14'b0, data[ad[3:2] * 4 +: 4]};
				9: get = {9'b0, ad[3] ? row[17:9] : row[8:0]};
				default: get = row;
			endcase
		end
	endfunction
	// The bits a write of width w changes in the word (x18, x36: its enabled bytes).
	function [17:0] written(input integer w, input [3:0] be);
		written = (w >= 18) ? {{9{be[1]}}, {9{be[0]}}} : (18'h3ffff >> (18 - w));
	endfunction
	function integer lsb_of(input integer w);
		lsb_of = (w == 36) ? 5 : (w == 18) ? 4 : (w == 9) ? 3 : (w == 4) ? 2 : (w == 2) ? 1 : 0;
	endfunction
	function [17:0] merge9(input [17:0] row, input [17:0] d, input lo, input hi);
		merge9 = {hi ? d[17:9] : row[17:9], lo ? d[8:0] : row[8:0]};
	endfunction

	wire wide = DATA_WIDTH_A == 36;
	wire [9:0] rowa = row_of(DATA_WIDTH_A, ada);
	wire [9:0] rowb = row_of(DATA_WIDTH_B, adb);
	// The word each port addresses, for the collision check.
	wire [13:0] worda = ada >> lsb_of(DATA_WIDTH_A);
	wire [13:0] wordb = adb >> lsb_of(DATA_WIDTH_B);
	wire ona = CEA & csa, onb = CEB & csb;
	wire wea = ona & WEA, web = onb & WEB & ~wide;
	reg [17:0] wide_lo = 18'b0;     // x36: the low half port B reads, out on DOA

	reg said = 1'b0;
	task collided;
		if (!said) begin
			$display("gatesim: DP16KD %m: a port read the word the other writes at the same edge (undefined on the device: the written bytes read inverted)");
			said = 1'b1;
		end
	endtask

	// Port A (x36: the write port)
	always @(posedge CLKA) begin
		if (RSTA) doa_q <= 18'b0;
		else if (ona && !wea && web && worda == wordb) begin
			doa_q <= get(DATA_WIDTH_A, ada, mem[rowa]) ^ written(DATA_WIDTH_B, adb[3:0]);
			collided;
		end
		else if (ona) begin
			if (wide) begin
				if (WEA) begin
					mem[rowa] <= merge9(mem[rowa], dia, ADA0, ADA1);
					mem[rowa | 10'd1] <= merge9(mem[rowa | 10'd1], dib, ADA2, ADA3);
				end
			end else if (WEA) begin
				mem[rowa] <= put(DATA_WIDTH_A, ada, mem[rowa], dia);
				if (WRITEMODE_A == "READBEFOREWRITE") doa_q <= get(DATA_WIDTH_A, ada, mem[rowa]);
				else if (WRITEMODE_A == "WRITETHROUGH")
					doa_q <= get(DATA_WIDTH_A, ada, put(DATA_WIDTH_A, ada, mem[rowa], dia));
			end else
				doa_q <= get(DATA_WIDTH_A, ada, mem[rowa]);
		end
	end
	// Port B (x36: the read port, both halves)
	always @(posedge CLKB) begin
		if (RSTB) begin
			dob_q <= 18'b0;
			wide_lo <= 18'b0;
		end else if (onb && !web && wea && worda == wordb) begin
			wide_lo <= mem[rowb] ^ written(18, ada[1:0]);
			dob_q <= wide ? mem[rowb | 10'd1] ^ written(18, ada[3:2])
			             : get(DATA_WIDTH_B, adb, mem[rowb]) ^ written(DATA_WIDTH_A, ada[3:0]);
			collided;
		end else if (onb) begin
			if (wide) begin
				wide_lo <= mem[rowb];
				dob_q <= mem[rowb | 10'd1];
			end else if (WEB) begin
				mem[rowb] <= put(DATA_WIDTH_B, adb, mem[rowb], dib);
				if (WRITEMODE_B == "READBEFOREWRITE") dob_q <= get(DATA_WIDTH_B, adb, mem[rowb]);
				else if (WRITEMODE_B == "WRITETHROUGH")
					dob_q <= get(DATA_WIDTH_B, adb, put(DATA_WIDTH_B, adb, mem[rowb], dib));
			end else
				dob_q <= get(DATA_WIDTH_B, adb, mem[rowb]);
		end
	end
	// The output registers (REGMODE OUTREG); x36's low half is port B's.
	always @(posedge CLKA) if (OCEA) doa_r <= doa_q;
	always @(posedge CLKB) if (OCEB) dob_r <= dob_q;
	reg [17:0] wide_lo_r = 18'b0;
	always @(posedge CLKB) if (OCEB) wide_lo_r <= wide_lo;
	wire [17:0] doa = wide ? ((REGMODE_B == "OUTREG") ? wide_lo_r : wide_lo)
	                       : ((REGMODE_A == "OUTREG") ? doa_r : doa_q);
	wire [17:0] dob = (REGMODE_B == "OUTREG") ? dob_r : dob_q;
	assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = doa;
	assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = dob;
endmodule
