// Package ztunnel evaluates the authorization policies istiod sends to ztunnel (the ambient index's
// converted policies) for one connection, as ztunnel does, written from ztunnel's documented behaviour (the
// authorization policy reference, which ztunnel's inbound check follows): any matching DENY policy denies;
// with no ALLOW policy the connection is allowed; else an ALLOW policy must match. Dry-run policies are
// not enforced.
package ztunnel

import (
	"fmt"
	"net/netip"
	"strings"

	"istio.io/istio/pkg/workloadapi/security"
)

// Verdict is what ztunnel decides for a connection.
type Verdict struct {
	Allowed bool
	// Denying names every matching DENY policy (ztunnel reports one of them; their order there is not
	// defined); AllowedBy the first matching ALLOW policy.
	Denying   []string
	AllowedBy string
}

// Decide applies the policies that apply to the destination workload to the connection.
func Decide(policies []*security.Authorization, c Conn) Verdict {
	v := Verdict{}
	allows := 0
	for _, p := range policies {
		if p.GetDryRun() {
			continue
		}
		if p.GetAction() == security.Action_DENY && Matches(p, c) {
			v.Denying = append(v.Denying, p.GetNamespace()+"/"+p.GetName())
		}
		if p.GetAction() == security.Action_ALLOW {
			allows++
		}
	}
	if len(v.Denying) > 0 {
		return v
	}
	if allows == 0 {
		v.Allowed = true
		return v
	}
	for _, p := range policies {
		if !p.GetDryRun() && p.GetAction() == security.Action_ALLOW && Matches(p, c) {
			v.Allowed, v.AllowedBy = true, p.GetNamespace()+"/"+p.GetName()
			return v
		}
	}
	return v
}

// Conn is what ztunnel knows of a connection: addresses and, over HBONE, the peer's identity.
type Conn struct {
	Src, Dst netip.Addr
	Port     uint32
	// Identity is the SPIFFE id without its scheme (trust-domain/ns/NS/sa/SA), empty without one.
	Identity           string
	Namespace, Account string
}

// NewConn reads a connection: addresses, port, and the peer's principal (spiffe://TD/ns/NS/sa/SA, or empty
// for a connection without identity).
func NewConn(src, dst string, port uint32, principal string) (Conn, error) {
	c := Conn{Port: port}
	var err error
	if c.Dst, err = netip.ParseAddr(dst); err != nil {
		return c, fmt.Errorf("destination address %q: %w", dst, err)
	}
	if c.Src, err = netip.ParseAddr(src); err != nil {
		return c, fmt.Errorf("source address %q: %w", src, err)
	}
	if principal != "" {
		id, ok := strings.CutPrefix(principal, "spiffe://")
		parts := strings.Split(id, "/")
		if !ok || len(parts) != 5 || parts[1] != "ns" || parts[3] != "sa" {
			return c, fmt.Errorf("principal %q is not spiffe://TD/ns/NS/sa/SA", principal)
		}
		c.Identity, c.Namespace, c.Account = id, parts[2], parts[4]
	}
	return c, nil
}

// Matches: the policy's groups are alternatives; a group's rules must all hold; a rule holds when one of
// its matches does (a match with no field at all holds for nothing; a rule with no match holds); a match
// holds when each of its fields does, a field holding when one of its values matches and none of its
// negated values does. A policy without groups matches nothing.
func Matches(p *security.Authorization, c Conn) bool {
	for _, g := range p.GetGroups() {
		all := true
		for _, r := range g.GetRules() {
			if !ruleHolds(r, c) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func ruleHolds(r *security.Rules, c Conn) bool {
	if len(r.GetMatches()) == 0 {
		return true
	}
	for _, m := range r.GetMatches() {
		if matchEmpty(m) {
			continue
		}
		if matchHolds(m, c) {
			return true
		}
	}
	return false
}

func matchEmpty(m *security.Match) bool {
	return len(m.GetNamespaces())+len(m.GetNotNamespaces())+len(m.GetServiceAccounts())+
		len(m.GetNotServiceAccounts())+len(m.GetPrincipals())+len(m.GetNotPrincipals())+
		len(m.GetSourceIps())+len(m.GetNotSourceIps())+len(m.GetDestinationIps())+
		len(m.GetNotDestinationIps())+len(m.GetDestinationPorts())+len(m.GetNotDestinationPorts()) == 0
}

func matchHolds(m *security.Match, c Conn) bool {
	return field(validAddresses(m.GetDestinationIps()), validAddresses(m.GetNotDestinationIps()), func(a netip.Prefix) bool { return a.Contains(c.Dst) }) &&
		field(validAddresses(m.GetSourceIps()), validAddresses(m.GetNotSourceIps()), func(a netip.Prefix) bool { return a.Contains(c.Src) }) &&
		field(m.GetDestinationPorts(), m.GetNotDestinationPorts(), func(p uint32) bool { return p == c.Port }) &&
		field(m.GetServiceAccounts(), m.GetNotServiceAccounts(), func(s *security.ServiceAccountMatch) bool {
			return c.Identity != "" && s.GetNamespace() == c.Namespace && s.GetServiceAccount() == c.Account
		}) &&
		field(validStrings(m.GetPrincipals()), validStrings(m.GetNotPrincipals()), func(s *security.StringMatch) bool {
			// A principal is matched without its spiffe:// scheme; no identity matches no principal.
			return c.Identity != "" && stringMatches(s, c.Identity)
		}) &&
		field(validStrings(m.GetNamespaces()), validStrings(m.GetNotNamespaces()), func(s *security.StringMatch) bool {
			return stringMatches(s, c.Namespace)
		})
}

// field holds when one of the values matches (or none is given) and none of the negated ones does.
func field[T any](values, not []T, matches func(T) bool) bool {
	if len(values) > 0 && !anyOf(values, matches) {
		return false
	}
	return !anyOf(not, matches)
}

func anyOf[T any](values []T, matches func(T) bool) bool {
	for _, v := range values {
		if matches(v) {
			return true
		}
	}
	return false
}

// validStrings drops string matches that say nothing (no kind of match set), as ztunnel does on reading.
func validStrings(in []*security.StringMatch) []*security.StringMatch {
	out := in[:0:0]
	for _, s := range in {
		if s.GetMatchType() != nil {
			out = append(out, s)
		}
	}
	return out
}

func stringMatches(s *security.StringMatch, v string) bool {
	switch t := s.GetMatchType().(type) {
	case *security.StringMatch_Exact:
		return v == t.Exact
	case *security.StringMatch_Prefix:
		return strings.HasPrefix(v, t.Prefix)
	case *security.StringMatch_Suffix:
		return strings.HasSuffix(v, t.Suffix)
	case *security.StringMatch_Presence:
		return v != ""
	}
	return false
}

// validAddresses are the address blocks ztunnel reads (a malformed one is dropped on reading).
func validAddresses(in []*security.Address) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range in {
		addr, ok := netip.AddrFromSlice(a.GetAddress())
		if !ok {
			continue
		}
		if prefix, err := addr.Unmap().Prefix(int(a.GetLength())); err == nil {
			out = append(out, prefix)
		}
	}
	return out
}
