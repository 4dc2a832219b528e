import BreakingNewsKit
import Foundation

/// What happens to the app.
public enum Message: Sendable, Hashable {
    case key(Key)
    case resized(rows: Int, columns: Int)
    case tick(Date)
    /// The hub to talk to is settled (its description for the header).
    case hubReady(String)
    case hubFailed(String)
    /// A registration attempt ended; `userInitiated` for Subscribe (shows a dialog).
    case registration(RegistrationRecord, userInitiated: Bool)
    case sent([SendResultRow])
    /// A send's explanation came (`lines`), or could not be had (`lines` says why).
    case explained(title: String, lines: [String], failed: Bool)
    case inbox(InboxUpdate)
    /// What another window or a command changed in the home: categories, registration, marks.
    /// `alertSwitchesStored`: how many of this window's alert switches were stored when the
    /// alerts were read (nil: none of its own, as from another process).
    case shared(SharedHomeState, alertSwitchesStored: Int? = nil)
    /// The read marks as they are on disk, with how many of this window's own changes had
    /// been applied there when they were read.
    case readMarks(ReadMarks, changesApplied: Int)
    case quit
}

/// What the app asks the world to do; the runtime does it and answers with messages.
public enum Effect: Sendable, Hashable {
    /// Store the selection, then register it.
    case subscribe([Category])
    case send(text: String, categories: [Category])
    /// Ask the hub why a send reached whom it reached.
    case explain(notificationId: String, category: String)
    /// Store one switch of the home's arrival alerts (every window of the home follows).
    case setAlert(ArrivalAlerts.Switch, on: Bool)
    /// Tell the terminal that `count` messages arrived, the newest saying `text` at log
    /// position `through`: only the home's first window to claim that position does. Nil for
    /// the sample a switch gives, which this window sounds.
    case alert(ArrivalAlerts, text: String, count: Int, through: Int?)
    /// Change the read marks the home's windows share (messages by log position).
    case changeReadMarks(ReadChange)
    /// Try the hub again now: end a receiver's wait, or settle the hub again.
    case reconnect
    case quit
}

/// How long a toast stays.
let toastSeconds: TimeInterval = 5

extension AppState {
    /// The pure heart of the app: applies a message and returns the effects to run.
    public mutating func reduce(_ message: Message) -> [Effect] {
        switch message {
        case .key(let key): return handle(key)
        case .resized(let rows, let columns):
            self.rows = rows
            self.columns = columns
            clampLog()
            return []
        case .tick(let date):
            now = date
            if let toast, toast.expires <= date { self.toast = nil }
            return releaseHeldAlert()
        case .hubReady(let description):
            hub = description
            return []
        case .hubFailed(let reason):
            connection = .offline(reason)
            return []
        case .registration(let record, let userInitiated):
            registration = record
            registering = false
            // A question on screen stays: the registration line shows the outcome too.
            if userInitiated, dialog?.confirm == nil {
                switch record.state {
                case .registered:
                    let names = record.categories.isEmpty ? "no categories" : record.categories.joined(separator: ", ")
                    dialog = Dialog(
                        title: "Subscribed", message: "Breaking news for \(names) will reach this terminal.", isError: false)
                case .pending:
                    dialog = Dialog(
                        title: "Error subscribing",
                        message:
                            "The hub could not be reached (\(record.detail ?? "no answer")). Your selection is saved and registers when the hub is back; press s to try now.",
                        isError: true)
                case .failed:
                    dialog = Dialog(
                        title: "Error subscribing",
                        message:
                            "\(record.detail ?? "The hub refused the registration."). Check the connection string's key and the hub name, then press s again.",
                        isError: true)
                }
            }
            return []
        case .explained(let title, let lines, let failed):
            dialog = Dialog(title: title, message: lines.joined(separator: "\n"), isError: failed)
            overlayTop = 0
            return []
        case .sent(let rows):
            compose.sending = false
            compose.results = rows
            if case .result = compose.focus { compose.focus = .send }
            if rows.allSatisfy(\.succeeded), compose.text.starts(with: compose.inFlight) {
                // What was sent leaves the field; what was typed during the send stays.
                let kept = compose.text.dropFirst(compose.inFlight.count).drop { $0 == " " }
                compose.cursor = max(0, compose.cursor - (compose.text.count - kept.count))
                compose.text = Array(kept)
            }
            compose.inFlight = []
            return []
        case .inbox(.status(let status)):
            connection = status
            if case .reconnecting(let seconds, _) = status {
                reconnectAt = now.addingTimeInterval(seconds)
            } else {
                reconnectAt = nil
            }
            return []
        case .inbox(.received(let entries)):
            let alert = arrivalAlert(for: entries)
            let onLog = screen == .log
            receive(entries)
            if onLog {
                // Keep the cursor on the same message; what arrived stays unread until the
                // cursor goes to it.
                log.cursor += entries.filter(passesFilter).count
                clampLog()
                return alert
            }
            if let newest = entries.last {
                // A burst is counted: "3 new: …" with the newest, not only the last of them.
                let count = entries.count + (toast.map { $0.expires > now ? $0.count : 0 } ?? 0)
                toast = Toast(
                    text: arrivalText(newest.text, count: count, one: "Notification: "),
                    expires: now.addingTimeInterval(toastSeconds), count: count)
            }
            return alert
        case .shared(let shared, let alertSwitchesStored):
            let stored = Set(shared.selection)
            // Switches the user is still changing here stay as they are.
            if switches == storedSelection { switches = stored }
            storedSelection = stored
            if !registering { registration = shared.registration }
            // Read before a switch of this window was stored, the alerts on disk lack it.
            if (alertSwitchesStored ?? alertSwitches) == alertSwitches { alerts = shared.alerts }
            return []
        case .readMarks(let marks, let applied):
            adoptReadMarks(marks, changesApplied: applied)
            return []
        case .quit:
            quitting = true
            return [.quit]
        }
    }

    private mutating func handle(_ key: Key) -> [Effect] {
        if dialog != nil || showHelp, scrollOverlay(key) { return [] }
        // Whatever closes a box, the next one opens at its top.
        defer { if dialog == nil, !showHelp { overlayTop = 0 } }
        if let shown = dialog {
            if let effect = shown.confirm {
                switch key {
                case .enter, .character("y"):
                    dialog = nil
                    return confirmed(effect)
                case .escape, .character("n"), .character("q"): dialog = nil
                default: break
                }
                return []
            }
            switch key {
            case .enter, .escape, .character(" "), .character("q"): dialog = nil
            default: break
            }
            return []
        }
        if showHelp {
            showHelp = false
            return []
        }
        if screen == .log, log.searching { return handleSearch(key) }
        if isEditingText, let effects = handleTextField(key) { return effects }
        if case .click(let row, let column) = key { return handleClick(row: row, column: column) }
        guard let command = KeyMap.command(for: key, on: screen) else { return [] }
        switch command {
        case .nextScreen: return show(ScreenID(rawValue: (screen.rawValue + 1) % ScreenID.allCases.count)!)
        case .previousScreen:
            return show(ScreenID(rawValue: (screen.rawValue + ScreenID.allCases.count - 1) % ScreenID.allCases.count)!)
        case .show(let target): return show(target)
        case .help:
            showHelp = true
            return []
        case .reconnect:
            switch connection {
            case .reconnecting, .offline, .notRegistered:
                connection = .connecting
                reconnectAt = nil
                return [.reconnect]
            default: return []
            }
        case .switchBell, .switchDesktop: return switchAlert(bell: command == .switchBell)
        case .quit:
            quitting = true
            return [.quit]
        default:
            switch screen {
            case .categories: return categoriesCommand(command)
            case .compose: return composeCommand(command)
            case .log: return logCommand(command)
            }
        }
    }

    private mutating func show(_ target: ScreenID) -> [Effect] {
        guard target != screen else { return [] }
        screen = target
        guard target == .log else { return [] }
        // Landing on the log puts the cursor on the newest message: that one is read, the
        // rest only when the cursor goes to them.
        toast = nil
        log.cursor = 0
        log.top = 0
        return readUnderCursor()
    }

    // MARK: Mouse

    private mutating func handleClick(row: Int, column: Int) -> [Effect] {
        if row == ScreenGeometry.tabsRow {
            // The tab bar: " 1 Categories   2 Compose   3 Log".
            for (screen, range) in Layout.tabRanges(self) where range.contains(column) { return show(screen) }
            return []
        }
        if screen == .categories, let index = CategoriesScreen.categoryRow(forScreenRow: row, self) {
            categoryCursor = index
            return categoriesCommand(.toggle)
        }
        return []
    }
}

extension AppState {
    /// Scrolls the dialog or help on screen with the list keys; false for any other key.
    mutating func scrollOverlay(_ key: Key) -> Bool {
        let geometry = ScreenGeometry(rows: rows, columns: columns)
        guard let overlay = Layout.overlay(self, geometry) else { return false }
        let height = min(overlay.lines.count, Layout.overlayRows(geometry))
        let last = max(0, overlay.lines.count - height)
        overlayTop = min(overlayTop, last)  // the screen may have grown since
        switch key {
        case .up, .character("k"): overlayTop -= 1
        case .down, .character("j"): overlayTop += 1
        case .pageUp: overlayTop -= height
        case .pageDown: overlayTop += height
        case .home, .character("g"): overlayTop = 0
        case .end, .character("G"): overlayTop = last
        default: return false
        }
        overlayTop = max(0, min(overlayTop, last))
        return true
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
