import Foundation
import NIOCore
import NIOPosix
import RevSyncProtocol

/// How often the proxy breaks a request, and how.
public struct FaultRates: Sendable, Hashable {
    /// Added before each request and each response is passed on.
    public var latency: Duration = .zero
    /// Share of requests whose connection is closed before they reach the server.
    public var refuse: Double = 0
    /// Share of requests the server processes (and commits) whose response never arrives.
    public var dropResponse: Double = 0
    /// Share of requests cut off halfway through: the server sees half a body, then a reset.
    public var resetMidBody: Double = 0
    /// Share of requests that stall: nothing moves until the client gives up.
    public var stall: Double = 0
    /// How long a stall lasts before the proxy closes the connection.
    public var stallDuration: Duration = .seconds(10)

    public init() {}

    /// No faults at all.
    public static let none = FaultRates()

    /// Rates like "30% of responses lost", plus some of every other fault.
    public static func harsh(latency: Duration = .milliseconds(5)) -> FaultRates {
        var rates = FaultRates()
        rates.latency = latency
        rates.refuse = 0.1
        rates.dropResponse = 0.3
        rates.resetMidBody = 0.05
        rates.stall = 0.02
        rates.stallDuration = .seconds(3)
        return rates
    }
}

/// What the proxy did, for the report.
public struct FaultCounts: Sendable, Hashable {
    public var requests = 0
    public var refused = 0
    public var responsesDropped = 0
    public var resets = 0
    public var stalls = 0

    public var total: Int { refused + responsesDropped + resets + stalls }
}

/// A TCP proxy on loopback between devices and a server that injects the faults of a poor
/// network: latency, connections dropped before the request reaches the server, responses
/// dropped after the server committed, connections reset halfway through a body, and stalls.
///
/// It knows just enough HTTP to tell requests apart on a kept-alive connection: client bytes
/// that follow response bytes start a new request, which draws its own fault.
public final class FaultProxy: Sendable {
    public let port: Int
    private let channel: any Channel
    private let state: SharedState

    /// What every connection of the proxy shares: the rates, the random draws, the counts.
    final class SharedState: Sendable {
        struct Values {
            var rates: FaultRates
            var random: SeededRandom
            var counts = FaultCounts()
        }

        let values: Locked<Values>

        init(rates: FaultRates, seed: UInt64) {
            values = Locked(Values(rates: rates, random: SeededRandom(seed: seed)))
        }

        /// The fault of a new request (or `nil`), counted.
        func drawFault() -> (Fault?, FaultRates) {
            values.withLock { values in
                let rates = values.rates
                values.counts.requests += 1
                let roll = values.random.nextDouble()
                var threshold = rates.refuse
                if roll < threshold {
                    values.counts.refused += 1
                    return (.refuse, rates)
                }
                threshold += rates.dropResponse
                if roll < threshold {
                    values.counts.responsesDropped += 1
                    return (.dropResponse, rates)
                }
                threshold += rates.resetMidBody
                if roll < threshold {
                    values.counts.resets += 1
                    return (.resetMidBody, rates)
                }
                threshold += rates.stall
                if roll < threshold {
                    values.counts.stalls += 1
                    return (.stall, rates)
                }
                return (nil, rates)
            }
        }
    }

    enum Fault { case refuse, dropResponse, resetMidBody, stall }

    private init(port: Int, channel: any Channel, state: SharedState) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Starts a proxy on a free loopback port in front of `127.0.0.1:upstreamPort`.
    public static func start(upstreamPort: Int, rates: FaultRates, seed: UInt64) async throws -> FaultProxy {
        let state = SharedState(rates: rates, seed: seed)
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { client in
                client.eventLoop.makeCompletedFuture {
                    try client.pipeline.syncOperations.addHandler(ClientSide(upstreamPort: upstreamPort, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw ChannelError.inappropriateOperationForState }
        return FaultProxy(port: port, channel: channel, state: state)
    }

    /// Changes the rates for the requests from now on (the final round turns faults off).
    public func setRates(_ rates: FaultRates) {
        state.values.withLock { $0.rates = rates }
    }

    public var counts: FaultCounts { state.values.withLock { $0.counts } }

    public func stop() async throws {
        try await channel.close()
    }
}

/// The client's connection: opens the upstream one and passes bytes on, breaking requests as drawn.
private final class ClientSide: ChannelInboundHandler, @unchecked Sendable {
    // Safe: every method runs on the client channel's event loop (the upstream channel is
    // made on the same loop, and lanes schedule there).
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let upstreamPort: Int
    private let state: FaultProxy.SharedState
    private var context: ChannelHandlerContext?
    private var upstream: (any Channel)?
    private var pending: [ByteBuffer] = []
    /// Whether response bytes came since the last request bytes: the next client bytes start a request.
    private var betweenRequests = true
    private var fault: FaultProxy.Fault?
    private var rates = FaultRates()
    private var closed = false
    /// Requests to the server, and responses (and the close that follows them) to the
    /// client, each passed on in order after the latency.
    private var toServer: Lane?
    private var toClient: Lane?

    init(upstreamPort: Int, state: FaultProxy.SharedState) {
        self.upstreamPort = upstreamPort
        self.state = state
    }

    func channelActive(context: ChannelHandlerContext) {
        self.context = context
        toServer = Lane(eventLoop: context.eventLoop)
        toClient = Lane(eventLoop: context.eventLoop)
        let client = context.channel
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ServerSide(client: client, relay: self))
                }
            }
            .connect(host: "127.0.0.1", port: upstreamPort)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.upstream = channel
                    for buffer in self.pending { self.forward(buffer) }
                    self.pending = []
                case .failure:
                    self.close(reset: false)
                }
            }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if betweenRequests {
            betweenRequests = false
            (fault, rates) = state.drawFault()
            switch fault {
            case .refuse:
                close(reset: false)
                return
            case .stall:
                let duration = TimeAmount.nanoseconds(
                    Int64(rates.stallDuration.components.seconds) * 1_000_000_000
                        + rates.stallDuration.components.attoseconds / 1_000_000_000)
                context.eventLoop.scheduleTask(in: duration) { self.close(reset: false) }
                return
            case .resetMidBody:
                var half = buffer
                if let slice = half.readSlice(length: max(1, buffer.readableBytes / 2)) { send(slice) }
                context.eventLoop.scheduleTask(in: .milliseconds(20)) { self.close(reset: true) }
                return
            case .dropResponse, nil:
                break
            }
        }
        guard fault != .stall, fault != .resetMidBody, !closed else { return }
        send(buffer)
    }

    func channelInactive(context: ChannelHandlerContext) {
        close(reset: false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        close(reset: false)
    }

    private func send(_ buffer: ByteBuffer) {
        if upstream == nil { pending.append(buffer) } else { forward(buffer) }
    }

    private func forward(_ buffer: ByteBuffer) {
        guard let upstream, !closed else { return }
        toServer?.enqueue(after: latency) { upstream.writeAndFlush(buffer, promise: nil) }
    }

    /// A response arrived from the server.
    func responseRead(_ buffer: ByteBuffer) {
        betweenRequests = true
        if fault == .dropResponse {
            close(reset: true)
            return
        }
        guard let context, !closed else { return }
        let channel = context.channel
        toClient?.enqueue(after: latency) { channel.writeAndFlush(buffer, promise: nil) }
    }

    /// The server closed its side: the client's closes too, once what came before reached it.
    func serverClosed() {
        guard !closed else { return }
        toClient?.enqueue(after: latency) { [weak self] in self?.close(reset: false) }
    }

    private var latency: TimeAmount {
        .nanoseconds(Int64(rates.latency.components.seconds) * 1_000_000_000 + rates.latency.components.attoseconds / 1_000_000_000)
    }

    func close(reset: Bool) {
        guard !closed else { return }
        closed = true
        for channel in [context?.channel, upstream].compactMap({ $0 }) {
            if reset, let socket = channel as? any SocketOptionProvider {
                // A zero linger makes the close a reset (RST), as a dropped connection looks.
                socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
    }
}

/// The server's connection: hands responses back to the client side.
private final class ServerSide: ChannelInboundHandler, @unchecked Sendable {
    // Safe: it runs on the upstream channel's event loop, which is the client channel's.
    typealias InboundIn = ByteBuffer

    private let client: any Channel
    private let relay: ClientSide

    init(client: any Channel, relay: ClientSide) {
        self.client = client
        self.relay = relay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        relay.responseRead(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        relay.serverClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        relay.close(reset: false)
    }
}

/// Actions run in order on one event loop, each no earlier than its own delay after it was
/// queued: latency without reordering.
private final class Lane: @unchecked Sendable {
    // Safe: `tail` is only touched on `eventLoop`, from the handlers that own the lane.
    private let eventLoop: any EventLoop
    private var tail: EventLoopFuture<Void>

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.tail = eventLoop.makeSucceededVoidFuture()
    }

    func enqueue(after delay: TimeAmount, _ action: @escaping @Sendable () -> Void) {
        let deadline = NIODeadline.now() + delay
        let eventLoop = self.eventLoop
        tail = tail.flatMap { eventLoop.scheduleTask(deadline: deadline) { action() }.futureResult }
    }
}
