package outbound

import (
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// blocked lists the ranges, beyond what netip.Addr's predicates name, that an outbound call
// may not reach: each is either this machine, a network that is not the public internet, or
// a range no host should answer from.
var blocked = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network address"},       // 0.x reaches this host on Linux
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT) address"}, // RFC 6598
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol address"},   // RFC 6890
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},   // RFC 2544
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"},         // and 255.255.255.255
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address"},        // deprecated, ::1 and :: included
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},         // deprecated, still routed by some stacks
}

// embedsIPv4 lists IPv6 prefixes that carry an IPv4 address a gateway will reach for the
// caller (NAT64, 6to4): the embedded address is checked as well.
var embedsIPv4 = []struct {
	prefix netip.Prefix
	offset int // byte offset of the IPv4 address in the IPv6 one
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},   // RFC 6052 well-known NAT64 prefix
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12}, // RFC 8215 local-use NAT64 prefix (/96 form)
	{netip.MustParsePrefix("2002::/16"), 2},       // 6to4
}

// CheckAddr reports whether ip may be the target of an outbound call from a deployment that
// does not allow private targets: nil for a public unicast address, else a *TargetError
// (which is ErrTargetNotAllowed) saying what kind of address it is. An IPv4-mapped IPv6
// address (::ffff:127.0.0.1) is judged as the IPv4 address it maps, and so are the IPv4
// addresses inside NAT64 and 6to4 addresses.
func CheckAddr(ip netip.Addr) error {
	if reason := disallowed(ip); reason != "" {
		return &TargetError{Addr: ip, Reason: reason}
	}
	return nil
}

func disallowed(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	ip = ip.Unmap().WithZone("")
	switch {
	case ip.IsLoopback():
		return "loopback address"
	case ip.IsUnspecified():
		return "unspecified address"
	case ip.IsPrivate():
		return "private address"
	case ip.IsLinkLocalUnicast():
		return "link-local address" // 169.254.169.254, the cloud metadata service, among them
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	for _, b := range blocked {
		if b.prefix.Contains(ip) {
			return b.reason
		}
	}
	for _, e := range embedsIPv4 {
		if e.prefix.Contains(ip) {
			b := ip.As16()
			v4 := netip.AddrFrom4([4]byte(b[e.offset : e.offset+4]))
			if r := disallowed(v4); r != "" {
				return r + " (inside " + e.prefix.String() + ")"
			}
		}
	}
	return ""
}

// Control is a net.Dialer Control function that refuses to connect to any address
// CheckAddr refuses, and to anything but TCP or UDP over IP (a Unix socket is this machine).
// It runs after name resolution, on the address actually dialled, so a name that resolves
// to a public address when checked and to a private one when used (DNS rebinding) is
// refused all the same; and it runs before connect, so nothing is sent to a refused address.
// The *TargetError it returns names the address, not the host: the client adds the host.
func Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return &TargetError{Reason: "network " + network + " not allowed"}
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &TargetError{Reason: "unparsable address"}
	}
	return CheckAddr(ip)
}

// NewDialer returns the dialer outbound connections use: guarded by Control unless
// allowPrivate. Other packages that open connections for a tenant (the db action's drivers)
// dial through it, so one rule covers every outbound connection.
func NewDialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = Control
	}
	return d
}

// NewHTTPClient returns an *http.Client whose connections go through the address guard
// (NewDialer) and that follows no redirect: for code that takes an *http.Client (a model
// SDK) or makes one attempt per request itself (webhook deliveries). maxIdlePerHost bounds
// the idle connections kept to one host (maxIdle all together; 0: the transport's default).
func NewHTTPClient(allowPrivate bool, maxIdle, maxIdlePerHost int) *http.Client {
	dialer := NewDialer(allowPrivate)
	return &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, ForceAttemptHTTP2: true,
			MaxIdleConns: maxIdle, MaxIdleConnsPerHost: maxIdlePerHost, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
