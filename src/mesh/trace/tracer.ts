/**
 * The state of one trace: the hops so far, the weighted splits met, the pending metric reports, and the
 * request as the proxies have rewritten it. Every walk (sidecar.ts, inbound.ts, gateway.ts, ambient.ts)
 * works on it; `deliver` (set by trace.ts, which knows every walk) hands a connection to whatever receives
 * it at its destination, so the walks need not import each other in a circle.
 */
import type { HttpRequest, MatchedRule } from '../http-match.ts';
import type { MeshService } from '../services.ts';
import { type PendingReport, type ReportedCluster, clientReport, waypointReport } from '../telemetry.ts';
import { Mesh as MeshGateway, type ResolvedVirtualService } from '../virtual-services.ts';
import type { SidecarScope } from '../sidecar-outbound.ts';
import type { Workload } from '../workloads.ts';
import type { Hop } from '../../model/trace-result.ts';
import type { Mesh } from '../compiled.ts';

export interface TraceOutcome {
  code: number;
  flags: string;
  /** The hop that produced the response itself (-1: the application). */
  hop: number;
  summary: string;
  /** The application that answered (`namespace/workload`, or `ip:port` outside the mesh). */
  answeredBy?: string;
}

/** The application answered (the response is its own, not a proxy's): `who` is the workload or `ip:port`. */
export function answered(who: string, detail: string): TraceOutcome {
  return { code: 200, flags: '-', hop: -1, summary: `answered by ${who}${detail}`, answeredBy: who };
}

/** An open connection a proxy hands on: who sent it, how, and where it lands. */
export interface Connection {
  sender: Workload | undefined;
  senderHop: number;
  mtls: boolean;
  ip: string;
  port: number;
  workload: Workload | undefined;
  /** TLS originated by an external client (https URL). */
  externalTls: boolean;
}

/** A connection, always built with the same shape. */
export function connection(
  sender: Workload | undefined,
  senderHop: number,
  mtls: boolean,
  ip: string,
  port: number,
  workload: Workload | undefined,
  externalTls = false,
): Connection {
  return { sender, senderHop, mtls, ip, port, workload, externalTls };
}

export const AmbientUnsupported =
  'a waypoint or ztunnel pod was addressed directly (as a client or a destination), which the simulator does not model';

/**
 * The steps a walk takes into another walk: delivering a connection to its destination (a sidecar's, a
 * gateway's or ztunnel's inbound), and taking a route (a sidecar's, a gateway's or a waypoint's). Handed to
 * the Tracer so that the walks reach each other without importing each other in a circle.
 */
export interface Walks {
  deliver(t: Tracer, conn: Connection): TraceOutcome;
  takeRoute(
    t: Tracer,
    proxy: Workload,
    hop: number,
    vs: ResolvedVirtualService,
    matched: MatchedRule,
    port: number,
    scope: SidecarScope | undefined,
    hostFallback: boolean,
  ): TraceOutcome;
}

export class Tracer {
  readonly hops: Hop[] = [];
  unsupported: string | undefined;
  /** Weighted splits met so far: the options and the index taken at each. */
  readonly splits: { options: number; taken: number; weight: number; total: number }[] = [];
  choices: readonly number[] = [];
  readonly reports: PendingReport[] = [];
  /** The client a waypoint serves, set when the request enters one: the waypoint reports on its behalf. */
  waypointClient: Workload | undefined;
  request: HttpRequest;
  /**
   * The address the client's connection was made to, as the proxy handling it sees it: where an
   * original-destination cluster (a ServiceEntry with `resolution: NONE`) sends it.
   */
  originalDestination: string | undefined;
  readonly mesh: Mesh;
  /** The steps that recurse through other walks, handed in by trace.ts (which knows every walk). */
  readonly walks: Walks;

  constructor(mesh: Mesh, request: HttpRequest, walks: Walks) {
    this.mesh = mesh;
    this.request = request;
    this.walks = walks;
    this.originalDestination = undefined;
  }

  /** Starts a hop; every hop object has the same fields (unset ones undefined, left out of JSON). */
  hop(kind: Hop['kind'], w: Workload, direction: Hop['direction'], listener: string, mtls = false): number {
    this.hops.push({
      kind,
      namespace: w.namespace,
      workload: w.name,
      direction,
      listener,
      routeConfig: undefined,
      virtualHost: undefined,
      virtualService: undefined,
      route: undefined,
      cluster: undefined,
      upstream: undefined,
      authority: this.request.authority,
      path: this.request.path,
      mtls,
      tls: undefined,
      decision: 'none',
      policy: undefined,
      code: undefined,
      flags: undefined,
      split: undefined,
      notes: [],
    });
    return this.hops.length - 1;
  }

  at(index: number): Hop {
    return this.hops[index] as Hop;
  }

  /** A sidecar's catch-all took the request: its report names PassthroughCluster or BlackHoleCluster. */
  reportCatchAll(hop: number, proxy: Workload, kind: 'passthrough' | 'blackhole', tcp: boolean): void {
    this.reports.push(
      clientReport(this.mesh, {
        proxy,
        hostFallback: true,
        authority: this.request.authority,
        cluster: { kind },
        mtls: false,
        hop,
        tcp,
      }),
    );
  }

  /** A proxy answers itself before any upstream: its report has no cluster (Host fallback where it applies). */
  replyWithoutUpstream(
    hop: number,
    proxy: Workload,
    hostFallback: boolean,
    code: number,
    flags: string,
    summary: string,
    tcp = false,
  ): TraceOutcome {
    this.reports.push(
      clientReport(this.mesh, {
        proxy,
        hostFallback,
        authority: this.request.authority,
        cluster: { kind: 'none' },
        mtls: false,
        hop,
        tcp,
      }),
    );
    return this.localReply(hop, code, flags, summary);
  }

  localReply(hop: number, code: number, flags: string, summary: string): TraceOutcome {
    if (hop >= 0) {
      this.at(hop).code = code;
      this.at(hop).flags = flags;
    }
    return { code, flags, hop, summary };
  }
}

export const MaxHops = 12;

/** Shared constants of the hot path (never changed): no allocation per trace for them. */
export const NoChoices: readonly number[] = Object.freeze([]);

export const MeshOnly: readonly string[] = Object.freeze([MeshGateway]);

export const NoLabels: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The report of a proxy forwarding to an endpoint of `service`: a waypoint reports for the client it serves
 * (`reporter="waypoint"`); a sidecar or gateway reports as the source.
 */
export function forwardReport(
  t: Tracer,
  proxy: Workload,
  hop: number,
  service: MeshService,
  peer: Workload | undefined,
  source: { hostFallback: boolean; cluster: ReportedCluster; mtls: boolean; tcp: boolean },
): PendingReport {
  if (proxy.proxy === 'waypoint')
    return waypointReport(t.mesh, {
      waypoint: proxy,
      client: t.waypointClient,
      service,
      endpoint: peer,
      hop,
    });
  return clientReport(t.mesh, {
    proxy,
    hostFallback: source.hostFallback,
    authority: t.request.authority,
    cluster: source.cluster,
    peer,
    mtls: source.mtls,
    hop,
    tcp: source.tcp,
  });
}
