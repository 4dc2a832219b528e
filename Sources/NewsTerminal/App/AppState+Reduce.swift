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
    /// This window started the local hub, which was not running (at launch, or for `r`, a
    /// send or a subscribe).
    case hubStarted
    /// A registration attempt ended; `userInitiated` for Subscribe (shows a dialog).
    case registration(RegistrationRecord, userInitiated: Bool)
    case sent([SendResultRow])
    /// A send's explanation came (`lines`), or could not be had (`lines` says why).
    case explained(title: String, lines: [String], failed: Bool)
    case inbox(InboxUpdate)
    /// A link opened, a copy or a pipe ended: what to say about it.
    case actionDone(String)
    /// The editor saved the message: the field's text now.
    case edited(String)
    /// What another window or a command changed in the home: categories, registration, marks.
    /// `alertSwitchesStored`: how many of this window's alert switches were stored when the
    /// alerts were read (nil: none of its own, as from another process).
    case shared(SharedHomeState, alertSwitchesStored: Int? = nil)
    /// The read and deleted marks as they are on disk, with how many of this window's own
    /// changes had been applied there when they were read.
    case marks(InboxMarks, changesApplied: Int)
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
    /// Change the read and deleted marks the home's windows share (messages by log position).
    case changeReadMarks(ReadChange)
    /// Open `url` (an http or https link) in the browser.
    case openLink(String)
    /// Put `text` (`what` says what it is: "the message", "the link") on the clipboard: the
    /// `copyCommand` of config.json, tmux's buffer inside tmux, else OSC 52.
    case copy(String, what: String)
    /// Let the user write the message in their editor (`$VISUAL`, `$EDITOR`), curses
    /// suspended; the field gets what the editor saved.
    case editMessage(String)
    /// Keep a send in the home's history (`SentHistory`).
    case remember(SentMessage)
    /// Run `command` with `text` on its standard input, on the terminal.
    case pipe(text: String, command: String)
    /// Try the hub again now: end a receiver's wait, or settle the hub again; `startingHub`
    /// starts the local hub when it is not running.
    case reconnect(startingHub: Bool)
    /// Receive again, on a new stream, as the identity the home holds now (it changed on
    /// disk, or its registration was removed).
    case followIdentity
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
            compose.fieldTop = composeField.top(from: compose.fieldTop, height: geometry.composeFieldRows)
            return []
        case .tick(let date):
            now = date
            if let toast, toast.expires <= date { self.toast = nil }
            return releaseHeldAlert()
        case .hubReady(let description):
            hub = description
            return []
        case .hubFailed(let reason):
            connection = .offline(.unavailable(reason))
            startingHub = false
            return []
        case .hubStarted:
            note("Started the local hub: it was not running", staysInFront: true)
            return []
        case .actionDone(let text):
            note(text)
            return []
        case .edited(let text):
            replaceMessage(with: Array(text))
            note("The message is as your editor saved it: Enter sends it")
            return []
        case .registration(let record, let userInitiated):
            registration = record
            registering = false
            if userInitiated { reportSubscribe(record) }
            return retryUnregistered(record)
        case .explained(let title, let lines, let failed):
            dialog = Dialog(title: title, message: lines.joined(separator: "\n"), isError: failed)
            overlayTop = 0
            return []
        case .sent(let rows):
            compose.sending = false
            compose.results = rows
            // The next story goes where the last one was typed.
            compose.focus = .text
            if rows.allSatisfy(\.succeeded), compose.text.starts(with: compose.inFlight) {
                // What was sent leaves the field; what was typed during the send stays.
                let kept = compose.text.dropFirst(compose.inFlight.count).drop { $0 == " " }
                compose.cursor = max(0, compose.cursor - (compose.text.count - kept.count))
                compose.text = Array(kept)
            }
            compose.inFlight = []
            compose.fieldTop = 0
            compose.goalColumn = nil
            // Sent to one category at least: the home's history has it, for ↑ to recall.
            let sent = compose.inFlightSend
            compose.inFlightSend = nil
            guard let sent, rows.contains(where: \.succeeded) else { return [] }
            compose.sent = Array((compose.sent + [sent]).suffix(SentHistory.limit))
            compose.recalled = nil
            compose.stashed = []
            return [.remember(sent)]
        case .inbox(.status(let status)):
            connection = status
            if case .reconnecting(let seconds, _) = status {
                reconnectAt = now.addingTimeInterval(seconds)
            } else {
                reconnectAt = nil
            }
            if status == .online { startingHub = false }
            return []
        case .inbox(.received(let entries)):
            let alert = arrivalAlert(for: entries)
            let place = screen == .log ? logPlace : nil
            receive(entries)
            if let place {
                followArrivals(entries, from: place)
                return alert
            }
            if let newest = entries.last {
                // A burst is counted: "3 new: …" with the newest, not only the last of them.
                let shown = toast.flatMap { $0.expires > now ? $0 : nil }
                let count = entries.count + (shown?.count ?? 0)
                // A notice that keeps its place (the hub was started) stays on the line after
                // the news: the send's own arrival hid it within a moment. Other notes give way.
                let notice = shown?.notice
                let arrival = arrivalText(newest.text, count: count, one: "Notification: ")
                toast = Toast(
                    text: notice.map { "\(arrival) · \($0)" } ?? arrival, expires: now.addingTimeInterval(toastSeconds),
                    count: count, notice: notice)
            }
            return alert
        case .shared(let shared, let alertSwitchesStored):
            let stored = Set(shared.selection)
            // Switches the user is still changing here stay as they are.
            if switches == storedSelection { switches = stored }
            storedSelection = stored
            // The home's registration gone (`unregister` in another process): the hub sends
            // this terminal nothing now, whatever its open stream says.
            let unregistered = !registering && registration != nil && shared.registration == nil
            if !registering { registration = shared.registration }
            // Read before a switch of this window was stored, the alerts on disk lack it.
            if (alertSwitchesStored ?? alertSwitches) == alertSwitches { alerts = shared.alerts }
            if let warning = shared.warning, dialog?.confirm == nil {
                dialog = Dialog(title: "A file could not be read", message: warning, isError: true)
            }
            var effects: [Effect] = []
            if let now = shared.identity,
                now.installationId != identity?.installationId || now.deviceToken != identity?.deviceToken
            {
                // The home changed on disk (restored from a copy, another version): this
                // window follows it, registration and stream.
                if identity != nil {
                    effects.append(.followIdentity)
                    note("This home is now installation \(now.installationId): receiving as it")
                }
                identity = now
            }
            if unregistered, !effects.contains(.followIdentity) {
                // A new stream, which the hub answers as it knows the terminal now (not
                // registered), and which the next registration opens at once.
                connection = .offline(.notRegistered)
                effects.append(.followIdentity)
            }
            if let record = shared.registration, !registering { effects += retryUnregistered(record) }
            return effects
        case .marks(let marks, let applied):
            adoptMarks(marks, changesApplied: applied)
            clampLog()
            return []
        case .quit:
            quitting = true
            return [.quit]
        }
    }

    /// A passing note in the toast bar; one that `staysInFront` keeps its place before the
    /// messages that arrive while it shows (nothing else on screen says it).
    mutating func note(_ text: String, staysInFront: Bool = false) {
        toast = Toast(
            text: text, expires: now.addingTimeInterval(toastSeconds), count: 0, notice: staysInFront ? text : nil)
    }

    /// A subscribe's outcome: a note when it worked (the registration line says it too),
    /// a box saying what to do when it did not.
    private mutating func reportSubscribe(_ record: RegistrationRecord) {
        // A question on screen stays: the registration line shows the outcome too.
        guard dialog?.isQuestion != true else { return }
        switch record.state {
        case .registered:
            let names = record.categories.isEmpty ? "no categories" : record.categories.joined(separator: ", ")
            note("✓ Subscribed: news for \(names) reaches this terminal")
        case .pending:
            dialog = Dialog(
                title: "Error subscribing",
                message:
                    "The hub could not be reached (\(record.detail ?? "no answer")). Your selection is saved and registers when the hub is back; \(subscribeHint) to try now.",
                isError: true)
        case .failed:
            let detail = record.detail ?? "The hub refused the registration"
            // A refused key's detail already says which connection string to fetch.
            let fix =
                detail.contains(HubProblem.fetchListenString)
                ? " Then \(subscribeHint) again."
                : ". Check the connection string's key and the hub name, then \(subscribeHint) again."
            dialog = Dialog(title: "Error subscribing", message: detail + fix, isError: true)
        }
    }

    /// A stream the hub refused for a device it did not know is tried again once a
    /// registration succeeded, not before.
    private mutating func retryUnregistered(_ record: RegistrationRecord) -> [Effect] {
        guard record.state == .registered, connection == .offline(.notRegistered) else { return [] }
        connection = .connecting
        return [.reconnect(startingHub: false)]
    }

    mutating func handle(_ key: Key) -> [Effect] {
        // On "Terminal too small" nothing else is seen, so nothing else acts: q quits (as it
        // says there, whatever the key map), every other key waits for a larger screen.
        guard geometry.fits else {
            guard key == .character("q") || keyMap.command(for: key, on: screen) == .quit else { return [] }
            quitting = true
            return [.quit]
        }
        // A note is read by the next key, as a status line is: it goes, and the key may set
        // its own (the footer's row then shows the keys of what the key opened).
        toast = nil
        // The command line of `|` takes text, a paste's included, and runs only on Enter.
        if pipePrompt != nil { return handlePipePrompt(key) }
        // Keys faster than typing: text in a field, set aside anywhere else.
        if case .burst(let text) = key { return handleBurst(text) }
        if chooser != nil { return handleChooser(key) }
        if screen == .log, let entry = dialog?.entry, let effects = messageViewKey(key, entry) { return effects }
        if dialog != nil || showHelp, scrollOverlay(key) { return [] }
        // Whatever closes a box, the next one opens at its top.
        defer { if dialog == nil, !showHelp { overlayTop = 0 } }
        if let shown = dialog {
            if shown.isQuestion { return answer(shown, with: key) }
            if let entry = shown.entry, let command = keyMap.command(for: key, on: .log),
                [.openLink, .copy, .pipe].contains(command)
            {
                return act(command, on: entry)
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
        if screen == .log, log.picker != nil { return handlePicker(key) }
        if isEditingText, let effects = handleTextField(key) { return effects }
        if screen == .compose, let effects = intoTheField(key) { return effects }
        if case .paste = key {
            note(Self.pasteSetAside)
            return []
        }
        if case .click(let row, let column) = key { return handleClick(row: row, column: column) }
        guard let command = keyMap.command(for: key, on: screen) else { return [] }
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
            case .reconnecting, .offline:
                startingHub = connection == .offline(.hubStopped)
                connection = .connecting
                reconnectAt = nil
                return [.reconnect(startingHub: true)]
            case .connecting, .online, .stopped: return []
            }
        case .switchBell, .switchDesktop: return switchAlert(bell: command == .switchBell)
        case .quit: return requestQuit()
        case .markShownRead where screen == .log && askBeforeMarkingRead(): return []
        default:
            switch screen {
            case .categories: return categoriesCommand(command)
            case .compose: return composeCommand(command)
            case .log: return logCommand(command)
            }
        }
    }

    private mutating func show(_ target: ScreenID) -> [Effect] {
        // Arriving on Compose (or 2 there) puts the keys in the message field.
        if target == .compose { compose.focus = .text }
        guard target != screen else { return [] }
        screen = target
        guard target == .log else { return [] }
        // Landing on the log puts the cursor on the newest message: that one is read, the
        // rest only when the cursor goes to them.
        toast = nil
        log.cursor = newestPosition
        log.top = 0
        log.newAbove = 0
        clampLog()
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
        // The arrows and j/k, and the keys config.json gives up and down.
        let bound = keyMap.command(for: key, on: screen)
        switch key {
        case .up, .character("k"),
            _ where bound == .up:
            overlayTop -= 1
        case .down, .character("j"),
            _ where bound == .down:
            overlayTop += 1
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
