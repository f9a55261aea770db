package envoy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// Connection is a downstream connection as a listener sees it.
type Connection struct {
	// DestinationIP and Port are where the client sent it (the original destination for a redirected one).
	DestinationIP string
	Port          uint32
	SourceIP      string
	// TLS: the connection is TLS (the transport protocol a TLS inspector reports), with its SNI and ALPN.
	TLS  bool
	SNI  string
	ALPN []string
	// HTTP: the bytes are plaintext HTTP (the protocol an HTTP inspector reports as ALPN: http/1.1 or h2c).
	HTTP  string
	Local bool
}

// ListenerByAddress finds the listener that takes a connection handed over by original destination:
// the one bound to exactly the destination address and port, else the wildcard address on that port.
func ListenerByAddress(listeners []*listener.Listener, ip string, port uint32) *listener.Listener {
	var wildcard *listener.Listener
	for _, l := range listeners {
		sa := l.GetAddress().GetSocketAddress()
		if sa == nil || sa.GetPortValue() != port {
			continue
		}
		switch sa.GetAddress() {
		case ip:
			return l
		case "0.0.0.0", "::":
			if wildcard == nil {
				wildcard = l
			}
		}
	}
	return wildcard
}

// ListenerNamed finds a listener by name.
func ListenerNamed(listeners []*listener.Listener, name string) *listener.Listener {
	for _, l := range listeners {
		if l.GetName() == name {
			return l
		}
	}
	return nil
}

// HasListenerFilter says whether the listener runs a listener filter (tls_inspector, http_inspector)
// for a connection to the port (a filter disabled for that port does not run).
func HasListenerFilter(l *listener.Listener, name string, port uint32) bool {
	for _, f := range l.GetListenerFilters() {
		if f.GetName() != name {
			continue
		}
		if d := f.GetFilterDisabled(); d != nil && portPredicate(d, port) {
			return false
		}
		return true
	}
	return false
}

// portPredicate evaluates the listener filter predicates Istio uses (destination_port_range, or_match,
// and_match, not_match, any_match) for a port.
func portPredicate(p *listener.ListenerFilterChainMatchPredicate, port uint32) bool {
	switch r := p.GetRule().(type) {
	case *listener.ListenerFilterChainMatchPredicate_AnyMatch:
		return r.AnyMatch
	case *listener.ListenerFilterChainMatchPredicate_DestinationPortRange:
		return int64(port) >= int64(r.DestinationPortRange.GetStart()) && int64(port) < int64(r.DestinationPortRange.GetEnd())
	case *listener.ListenerFilterChainMatchPredicate_NotMatch:
		return !portPredicate(r.NotMatch, port)
	case *listener.ListenerFilterChainMatchPredicate_OrMatch:
		for _, q := range r.OrMatch.GetRules() {
			if portPredicate(q, port) {
				return true
			}
		}
		return false
	case *listener.ListenerFilterChainMatchPredicate_AndMatch:
		for _, q := range r.AndMatch.GetRules() {
			if !portPredicate(q, port) {
				return false
			}
		}
		return true
	}
	return false
}

// MatchFilterChain selects a filter chain as Envoy's filter chain manager does: level by level
// (destination port, destination IP, server name, transport protocol, application protocols, direct
// source IP, source type, source IP, source port), taking at each level the most specific value that
// matches and never falling back to a less specific one when the chosen branch matches nothing further.
// With nothing matched, the default filter chain (nil when there is none: the connection is closed).
func MatchFilterChain(l *listener.Listener, c Connection) (*listener.FilterChain, error) {
	if l.GetFilterChainMatcher() != nil {
		return matchTree(l, c)
	}
	dst, err := parseAddr(c.DestinationIP)
	if err != nil {
		return nil, err
	}
	src, _ := parseAddr(c.SourceIP)
	chains := l.GetFilterChains()
	levels := []func([]*listener.FilterChain) []*listener.FilterChain{
		func(in []*listener.FilterChain) []*listener.FilterChain {
			return mostSpecificExact(in, func(m *listener.FilterChainMatch) (bool, bool) {
				p := m.GetDestinationPort().GetValue()
				return p != 0, p == c.Port
			})
		},
		func(in []*listener.FilterChain) []*listener.FilterChain {
			return longestPrefix(in, dst, func(m *listener.FilterChainMatch) []*core.CidrRange { return m.GetPrefixRanges() })
		},
		func(in []*listener.FilterChain) []*listener.FilterChain { return byServerName(in, c) },
		func(in []*listener.FilterChain) []*listener.FilterChain {
			transport := "raw_buffer"
			if c.TLS {
				transport = "tls"
			}
			return mostSpecificExact(in, func(m *listener.FilterChainMatch) (bool, bool) {
				t := m.GetTransportProtocol()
				return t != "", t == transport
			})
		},
		func(in []*listener.FilterChain) []*listener.FilterChain { return byApplicationProtocol(in, c) },
		func(in []*listener.FilterChain) []*listener.FilterChain {
			return longestPrefix(in, src, func(m *listener.FilterChainMatch) []*core.CidrRange {
				return m.GetDirectSourcePrefixRanges()
			})
		},
		func(in []*listener.FilterChain) []*listener.FilterChain { return bySourceType(in, c.Local) },
		func(in []*listener.FilterChain) []*listener.FilterChain {
			return longestPrefix(in, src, func(m *listener.FilterChainMatch) []*core.CidrRange { return m.GetSourcePrefixRanges() })
		},
	}
	for _, level := range levels {
		chains = level(chains)
		if len(chains) == 0 {
			return l.GetDefaultFilterChain(), nil
		}
	}
	// Source ports: Istio sets none; Envoy refuses two chains with the same match.
	if len(chains) > 1 {
		names := make([]string, 0, len(chains))
		for _, fc := range chains {
			names = append(names, fc.GetName())
		}
		return nil, fmt.Errorf("listener %s: filter chains %v have the same match", l.GetName(), names)
	}
	return chains[0], nil
}

// mostSpecificExact keeps the chains whose field is set and equal, or else those that leave it unset.
func mostSpecificExact(in []*listener.FilterChain, test func(*listener.FilterChainMatch) (set, equal bool)) []*listener.FilterChain {
	var exact, unset []*listener.FilterChain
	for _, fc := range in {
		set, eq := test(fc.GetFilterChainMatch())
		switch {
		case set && eq:
			exact = append(exact, fc)
		case !set:
			unset = append(unset, fc)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return unset
}

// longestPrefix keeps the chains with the longest prefix that holds the address, or else those with none.
func longestPrefix(in []*listener.FilterChain, addr netip.Addr, ranges func(*listener.FilterChainMatch) []*core.CidrRange) []*listener.FilterChain {
	best := -1
	var chosen, unset []*listener.FilterChain
	for _, fc := range in {
		rs := ranges(fc.GetFilterChainMatch())
		if len(rs) == 0 {
			unset = append(unset, fc)
			continue
		}
		length := -1
		for _, r := range rs {
			p, err := prefixOf(r)
			if err != nil || !addr.IsValid() || !p.Contains(addr) {
				continue
			}
			length = max(length, p.Bits())
		}
		switch {
		case length < 0:
		case length > best:
			best, chosen = length, []*listener.FilterChain{fc}
		case length == best:
			chosen = append(chosen, fc)
		}
	}
	if best >= 0 {
		return chosen
	}
	return unset
}

func prefixOf(r *core.CidrRange) (netip.Prefix, error) {
	a, err := netip.ParseAddr(r.GetAddressPrefix())
	if err != nil {
		return netip.Prefix{}, err
	}
	bits := int(r.GetPrefixLen().GetValue())
	if r.GetPrefixLen() == nil {
		bits = a.BitLen()
	}
	return a.Prefix(bits)
}

func parseAddr(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("address %q: %w", s, err)
	}
	return a.Unmap(), nil
}

// byServerName: an exact server name, then the longest wildcard suffix (`*.example.com`, then `*.com`),
// then the chains without server names. Without SNI only the last.
func byServerName(in []*listener.FilterChain, c Connection) []*listener.FilterChain {
	sni := strings.ToLower(c.SNI)
	var keys []string
	if sni != "" {
		keys = append(keys, sni)
		// Each dot after the first character opens a wildcard: *.example.com, then *.com.
		for i := 1; i < len(sni)-1; i++ {
			if sni[i] == '.' {
				keys = append(keys, "*"+sni[i:])
			}
		}
	}
	return firstKey(in, keys, func(m *listener.FilterChainMatch) []string {
		names := make([]string, 0, len(m.GetServerNames()))
		for _, n := range m.GetServerNames() {
			names = append(names, strings.ToLower(n))
		}
		return names
	})
}

// byApplicationProtocol: the chains naming one of the connection's protocols (ALPN from TLS, or what the
// HTTP inspector found), in the connection's order, else those naming none.
func byApplicationProtocol(in []*listener.FilterChain, c Connection) []*listener.FilterChain {
	protocols := c.ALPN
	if !c.TLS && c.HTTP != "" {
		protocols = []string{c.HTTP}
	}
	return firstKey(in, protocols, func(m *listener.FilterChainMatch) []string { return m.GetApplicationProtocols() })
}

// firstKey keeps the chains whose field lists the first key (in order) that any chain lists; with none,
// the chains whose field is empty.
func firstKey(in []*listener.FilterChain, keys []string, field func(*listener.FilterChainMatch) []string) []*listener.FilterChain {
	for _, key := range keys {
		var hit []*listener.FilterChain
		for _, fc := range in {
			if slices.Contains(field(fc.GetFilterChainMatch()), key) {
				hit = append(hit, fc)
			}
		}
		if len(hit) > 0 {
			return hit
		}
	}
	var unset []*listener.FilterChain
	for _, fc := range in {
		if len(field(fc.GetFilterChainMatch())) == 0 {
			unset = append(unset, fc)
		}
	}
	return unset
}

func bySourceType(in []*listener.FilterChain, local bool) []*listener.FilterChain {
	want := listener.FilterChainMatch_EXTERNAL
	if local {
		want = listener.FilterChainMatch_SAME_IP_OR_LOOPBACK
	}
	return mostSpecificExact(in, func(m *listener.FilterChainMatch) (bool, bool) {
		t := m.GetSourceType()
		return t != listener.FilterChainMatch_ANY, t == want
	})
}
