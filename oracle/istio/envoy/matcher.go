package envoy

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	xdsmatcher "github.com/cncf/xds/go/xds/type/matcher/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	network "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A listener's filter_chain_matcher (the unified matcher API, which Istio's waypoints use): a tree of
// inputs read from the connection and maps from their values, whose actions name a filter chain. Written
// from Envoy's documentation of the matcher API, its network inputs and the IP matcher.

// matchTree selects the filter chain a listener's matcher names for the connection (nil when it names none:
// the default filter chain then takes the connection, if the listener has one).
func matchTree(l *listener.Listener, c Connection) (*listener.FilterChain, error) {
	name, err := evalMatcher(l.GetFilterChainMatcher(), c)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
	}
	if name == "" {
		return l.GetDefaultFilterChain(), nil
	}
	for _, fc := range l.GetFilterChains() {
		if fc.GetName() == name {
			return fc, nil
		}
	}
	return nil, fmt.Errorf("listener %s: the matcher names filter chain %q, which it does not have", l.GetName(), name)
}

// evalMatcher returns the filter chain name the matcher's action gives ("" when nothing matches).
func evalMatcher(m *xdsmatcher.Matcher, c Connection) (string, error) {
	if m == nil {
		return "", nil
	}
	var (
		got string
		err error
	)
	switch t := m.GetMatcherType().(type) {
	case *xdsmatcher.Matcher_MatcherTree_:
		got, err = evalTree(t.MatcherTree, c)
	case nil:
	default:
		return "", fmt.Errorf("a matcher of type %T is not read by the oracle", t)
	}
	if err != nil || got != "" {
		return got, err
	}
	return evalOnMatch(m.GetOnNoMatch(), c)
}

// evalOnMatch follows an on_match: a nested matcher, or an action naming a filter chain.
func evalOnMatch(o *xdsmatcher.Matcher_OnMatch, c Connection) (string, error) {
	if o == nil {
		return "", nil
	}
	if o.GetKeepMatching() {
		return "", fmt.Errorf("on_match with keep_matching is not read by the oracle")
	}
	switch t := o.GetOnMatch().(type) {
	case *xdsmatcher.Matcher_OnMatch_Matcher:
		return evalMatcher(t.Matcher, c)
	case *xdsmatcher.Matcher_OnMatch_Action:
		name := &wrapperspb.StringValue{}
		if err := t.Action.GetTypedConfig().UnmarshalTo(name); err != nil {
			return "", fmt.Errorf("action %s: %w", t.Action.GetName(), err)
		}
		return name.GetValue(), nil
	}
	return "", nil
}

// evalTree reads the tree's input and looks its value up: an exact map, a prefix map (longest prefix first,
// shorter ones when its nested matcher matches nothing), or the IP matcher.
func evalTree(t *xdsmatcher.Matcher_MatcherTree, c Connection) (string, error) {
	value, present, err := treeInput(t, c)
	if err != nil || !present {
		return "", err
	}
	switch {
	case t.GetExactMatchMap() != nil:
		return evalOnMatch(t.GetExactMatchMap().GetMap()[value], c)
	case t.GetPrefixMatchMap() != nil:
		var keys []string
		for k := range t.GetPrefixMatchMap().GetMap() {
			if strings.HasPrefix(value, k) {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
		for _, k := range keys {
			if got, err := evalOnMatch(t.GetPrefixMatchMap().GetMap()[k], c); err != nil || got != "" {
				return got, err
			}
		}
		return "", nil
	case t.GetCustomMatch() != nil:
		ipm := &xdsmatcher.IPMatcher{}
		if err := t.GetCustomMatch().GetTypedConfig().UnmarshalTo(ipm); err != nil {
			return "", fmt.Errorf("custom matcher %s is not an IP matcher the oracle reads: %w", t.GetCustomMatch().GetName(), err)
		}
		return evalIPMatcher(ipm, value, c)
	}
	return "", fmt.Errorf("a matcher tree without a map the oracle reads")
}

// evalIPMatcher tries the ranges that contain the address, most specific first: when one's nested matcher
// matches nothing, only less specific ranges that are not exclusive are tried.
func evalIPMatcher(m *xdsmatcher.IPMatcher, value string, c Connection) (string, error) {
	ip, err := netip.ParseAddr(value)
	if err != nil {
		return "", nil
	}
	type candidate struct {
		bits      int
		exclusive bool
		onMatch   *xdsmatcher.Matcher_OnMatch
	}
	var found []candidate
	for _, rm := range m.GetRangeMatchers() {
		best := -1
		for _, r := range rm.GetRanges() {
			addr, err := netip.ParseAddr(r.GetAddressPrefix())
			if err != nil {
				return "", fmt.Errorf("IP matcher range %q: %w", r.GetAddressPrefix(), err)
			}
			prefix, err := addr.Prefix(int(r.GetPrefixLen().GetValue()))
			if err != nil {
				return "", fmt.Errorf("IP matcher range %q/%d: %w", r.GetAddressPrefix(), r.GetPrefixLen().GetValue(), err)
			}
			if prefix.Contains(ip) && prefix.Bits() > best {
				best = prefix.Bits()
			}
		}
		if best >= 0 {
			found = append(found, candidate{best, rm.GetExclusive(), rm.GetOnMatch()})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].bits > found[j].bits })
	for i, f := range found {
		if i > 0 && f.exclusive {
			continue
		}
		if got, err := evalOnMatch(f.onMatch, c); err != nil || got != "" {
			return got, err
		}
	}
	return "", nil
}

// treeInput is the value of the tree's input for the connection, and whether it has one.
func treeInput(t *xdsmatcher.Matcher_MatcherTree, c Connection) (string, bool, error) {
	input := t.GetInput()
	if input == nil {
		return "", false, fmt.Errorf("a matcher tree without an input")
	}
	any := input.GetTypedConfig()
	switch {
	case any.MessageIs(&network.DestinationIPInput{}):
		return c.DestinationIP, true, nil
	case any.MessageIs(&network.DestinationPortInput{}):
		return strconv.FormatUint(uint64(c.Port), 10), true, nil
	case any.MessageIs(&network.SourceIPInput{}), any.MessageIs(&network.DirectSourceIPInput{}):
		return c.SourceIP, c.SourceIP != "", nil
	case any.MessageIs(&network.ServerNameInput{}):
		return c.SNI, c.SNI != "", nil
	case any.MessageIs(&network.TransportProtocolInput{}):
		if c.TLS {
			return "tls", true, nil
		}
		return "raw_buffer", true, nil
	case any.MessageIs(&network.ApplicationProtocolInput{}):
		// The application protocols an inspector found, each in single quotes, joined by commas.
		protocols := c.ALPN
		if c.HTTP != "" {
			protocols = []string{c.HTTP}
		}
		if len(protocols) == 0 {
			return "", false, nil
		}
		quoted := make([]string, len(protocols))
		for i, p := range protocols {
			quoted[i] = "'" + p + "'"
		}
		return strings.Join(quoted, ","), true, nil
	}
	return "", false, fmt.Errorf("matcher input %s is not read by the oracle", input.GetName())
}
