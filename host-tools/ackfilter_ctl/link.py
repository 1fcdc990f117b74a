"""The byte pipe to a board's UART (``--port``) or to a simulated SoC's
(``--connect HOST:PORT``)."""

import socket
import time

__all__ = ["LinkError", "open_link", "TcpLink", "SerialLink", "DEFAULT_BAUD"]

DEFAULT_BAUD = 115200


class LinkError(OSError):
    """The device cannot be opened, or the connection broke."""


class TcpLink:
    """A TCP connection: the simulated SoC serves its UART on a port."""

    def __init__(self, host, port, *, connect_timeout=5.0):
        self.name = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as e:
            raise LinkError(f"cannot connect to {self.name}: {e.strerror or e} "
                            "(is `make sim-soc` running?)") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def write(self, data):
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise LinkError(f"{self.name}: connection lost ({e})") from None

    def read(self, timeout):
        """Whatever bytes arrive within ``timeout`` seconds (b"" if none)."""
        self.sock.settimeout(max(timeout, 1e-3))
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return b""
        except OSError as e:
            raise LinkError(f"{self.name}: connection lost ({e})") from None
        if not data:
            raise LinkError(f"{self.name}: the other end closed the connection")
        return data

    def close(self):
        self.sock.close()


class SerialLink:
    """A serial port (the board's UART through a USB adapter), 8N1, opened
    exclusively: a second program (another ackfilter-ctl, a terminal) would
    take bytes of the replies and mix its lines into the commands."""

    def __init__(self, port, baud=DEFAULT_BAUD):
        self.name = port
        try:
            import serial
        except ImportError:
            raise LinkError("--port needs pyserial: pip install pyserial "
                            "(it comes with `pip install ackfilter-ctl`)") from None
        try:
            self.port = serial.Serial(port, baud, bytesize=8, parity="N", stopbits=1, timeout=0,
                                      exclusive=True)
        except (serial.SerialException, OSError, ValueError) as e:
            raise LinkError(f"cannot open {port}: {e}") from None
        self._serial = serial

    def write(self, data):
        try:
            self.port.write(data)
            self.port.flush()
        except (self._serial.SerialException, OSError) as e:
            raise LinkError(f"{self.name}: {e}") from None

    def read(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                data = self.port.read(4096)
            except (self._serial.SerialException, OSError) as e:
                raise LinkError(f"{self.name}: {e}") from None
            if data or time.monotonic() >= deadline:
                return data
            time.sleep(0.005)

    def close(self):
        self.port.close()


def open_link(*, port=None, connect=None, baud=DEFAULT_BAUD):
    """``port``: a serial device; ``connect``: ``HOST:PORT`` (one of the two)."""
    if (port is None) == (connect is None):
        raise LinkError("give one of --port DEVICE or --connect HOST:PORT")
    if port is not None:
        return SerialLink(port, baud)
    host, sep, num = connect.rpartition(":")
    if not sep or not host or not num.isdigit() or not 0 < int(num) < 65536:
        raise LinkError(f"--connect wants HOST:PORT (e.g. localhost:2323), not {connect!r}")
    return TcpLink(host, int(num))
