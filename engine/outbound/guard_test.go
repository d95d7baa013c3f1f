package outbound_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/outbound"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, ip := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.215.14", "172.32.0.1", "100.128.0.1", "192.0.2.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8", "64:ff9b::808:808",
	} {
		require.NoError(t, outbound.CheckAddr(netip.MustParseAddr(ip)), ip)
	}
	for ip, reason := range map[string]string{
		"127.0.0.1":          "loopback",
		"127.255.0.9":        "loopback",
		"::1":                "loopback",
		"::ffff:127.0.0.1":   "loopback",
		"10.0.0.1":           "private",
		"172.16.0.1":         "private",
		"192.168.1.1":        "private",
		"::ffff:10.1.2.3":    "private",
		"fd00::1":            "private",
		"fc00::1":            "private",
		"169.254.169.254":    "link-local",
		"fe80::1":            "link-local",
		"fe80::1%eth0":       "link-local",
		"100.64.0.1":         "CGNAT",
		"100.127.255.254":    "CGNAT",
		"0.0.0.0":            "unspecified",
		"::":                 "unspecified",
		"0.1.2.3":            "this-network",
		"224.0.0.1":          "multicast",
		"ff02::1":            "multicast",
		"255.255.255.255":    "reserved",
		"198.18.0.1":         "benchmarking",
		"::127.0.0.1":        "IPv4-compatible",
		"64:ff9b::a9fe:a9fe": "link-local", // NAT64 of 169.254.169.254
		"2002:7f00:1::":      "loopback",   // 6to4 of 127.0.0.1
	} {
		err := outbound.CheckAddr(netip.MustParseAddr(ip))
		require.ErrorIs(t, err, outbound.ErrTargetNotAllowed, ip)
		require.ErrorContains(t, err, reason, ip)
	}
	require.Error(t, outbound.CheckAddr(netip.Addr{}))
}

func TestControl(t *testing.T) {
	t.Parallel()
	require.NoError(t, outbound.Control("tcp4", "8.8.8.8:443", nil))
	require.NoError(t, outbound.Control("tcp6", "[2606:4700:4700::1111]:443", nil))
	for _, c := range []struct{ network, address string }{
		{"tcp4", "127.0.0.1:80"},
		{"tcp6", "[::1]:80"},
		{"tcp6", "[::ffff:169.254.169.254]:80"},
		{"tcp4", "10.0.0.1:5432"},
		{"unix", "/var/run/postgresql/.s.PGSQL.5432"},
		{"tcp", "not-an-address:80"},
	} {
		require.ErrorIs(t, outbound.Control(c.network, c.address, nil), outbound.ErrTargetNotAllowed, c)
	}
	require.Nil(t, outbound.NewDialer(true).Control)
	require.NotNil(t, outbound.NewDialer(false).Control)
}
