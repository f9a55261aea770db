/**
 * KFM414: a ServiceEntry with a TCP port (or one of no stated protocol) and no `addresses`, where nothing
 * allocates it one (docs/semantics.md, ServiceEntries). Sidecars cannot tell its TCP traffic by host, so
 * they catch it by port alone on `0.0.0.0:<port>`: every connection to that port, to any address, goes to
 * this entry, and of several such entries on one port only one is used. Sidecar DNS capture with
 * auto-allocation in the mesh's proxy metadata, or addresses istiod wrote in its status, give it one (the
 * latter only where istiod allocates: not for resolution NONE, nor where the entry turns allocation off).
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, statusOf } from '../../model/specs.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const serviceEntryWithoutAddress: Rule = {
  code: 'KFM414',
  name: 'service-entry-without-address',
  severity: Severity.Warning,
  description:
    'a ServiceEntry with a TCP port and no address: sidecars catch every connection to that port for it',
  reads: [GroupKind.ServiceEntry],
  // istioctl reports it twice: its analyzer, and Istio's validation warning.
  istio: [
    { analyzer: 'serviceentry.ProtocolAddressesAnalyzer', code: 'IST0134' },
    { analyzer: 'schemaValidation.CollectionValidationAnalyzer', code: 'IST0133' },
  ],
  check(context: AnalyzeContext): Finding[] {
    if (context.mesh().config.dnsAutoAllocate) return [];
    return context.snapshot.list(GroupKind.ServiceEntry).flatMap((entry) => {
      const spec = specOf(entry, 'networking.istio.io/ServiceEntry');
      // istiod allocates addresses (and its data plane uses them) except for resolution NONE or where the
      // entry turns allocation off; addresses in the status of such an entry are not used.
      const allocates =
        (spec.resolution ?? 'NONE') !== 'NONE' &&
        entry.metadata.labels?.[Label.EnableAutoallocateIp]?.toLowerCase() !== 'false';
      const allocated = (statusOf(entry, 'networking.istio.io/ServiceEntry').addresses ?? []).length > 0;
      if (spec.addresses !== undefined || (allocates && allocated)) return [];
      return (spec.ports ?? []).flatMap((port, i) => {
        if (port.protocol && port.protocol.toUpperCase() !== 'TCP') return [];
        // Istio's validation warns where istiod allocates nothing, for a protocol written TCP or none.
        // istioctl's analyzer counts the status's addresses wherever they are.
        const warned = !allocates && (!port.protocol || port.protocol === 'TCP');
        const istio = (serviceEntryWithoutAddress.istio ?? []).filter((c) =>
          c.code === 'IST0133' ? warned : !allocated,
        );
        return [
          findingOf(
            serviceEntryWithoutAddress,
            context,
            entry,
            ['spec', 'ports', i],
            `port ${port.number ?? '?'} is TCP and the entry has no addresses: sidecars send every connection to port ${port.number ?? '?'} (any address) here`,
            {
              istio,
              fix: "give the entry addresses, or turn on sidecar DNS capture with auto-allocation (ISTIO_META_DNS_CAPTURE and ISTIO_META_DNS_AUTO_ALLOCATE in the mesh's proxyMetadata)",
            },
          ),
        ];
      });
    });
  },
};
