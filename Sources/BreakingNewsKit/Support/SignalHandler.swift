import Foundation

/// Turns termination signals into a call, so that a program of the app (the UI, `log
/// --follow`) ends its own way, restoring the terminal or closing a stream, instead of being
/// killed mid-write. The signals' default action is off while the handler lives; `cancel`
/// stops watching.
public final class SignalHandler {
    private let sources: [any DispatchSourceSignal]

    /// Calls `handle` with the signal's number, on a global queue, each time one arrives.
    public init(_ signals: [Int32] = [SIGINT, SIGTERM], handle: @escaping @Sendable (Int32) -> Void) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handle(number) }
            source.resume()
            return source
        }
    }

    public func cancel() {
        for source in sources { source.cancel() }
    }
}
