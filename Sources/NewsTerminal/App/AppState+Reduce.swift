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
    case inbox(InboxUpdate)
    case quit
}

/// What the app asks the world to do; the runtime does it and answers with messages.
public enum Effect: Sendable, Hashable {
    /// Store the selection, then register it.
    case subscribe([String])
    case send(text: String, categories: [String])
    /// Mark everything received as read.
    case markRead
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
            return []
        case .hubReady(let description):
            hub = description
            return []
        case .hubFailed(let reason):
            connection = .offline(reason)
            return []
        case .registration(let record, let userInitiated):
            registration = record
            registering = false
            if userInitiated {
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
        case .sent(let rows):
            compose.sending = false
            compose.results = rows
            if rows.allSatisfy(\.succeeded) {
                compose.text = []
                compose.cursor = 0
            }
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
            let onLog = screen == .log
            items += entries.map { LogItem(entry: $0, unread: true) }
            if onLog {
                // Seen as it arrives; keep the cursor on the same message.
                log.cursor += entries.filter { log.filter == nil || $0.category == log.filter }.count
                clampLog()
                return [.markRead]
            }
            if let newest = entries.last {
                toast = Toast(text: "Notification: \(newest.text)", expires: now.addingTimeInterval(toastSeconds))
            }
            return []
        case .quit:
            quitting = true
            return [.quit]
        }
    }

    private mutating func handle(_ key: Key) -> [Effect] {
        if dialog != nil {
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
        var effects: [Effect] = []
        if screen == .log {
            // Leaving the log: what was shown is now read.
            for i in items.indices { items[i].unread = false }
        }
        screen = target
        if target == .log {
            toast = nil
            log.cursor = 0
            log.top = 0
            if unreadTotal > 0 { effects.append(.markRead) }
        }
        return effects
    }

    // MARK: Categories

    private mutating func categoriesCommand(_ command: Command) -> [Effect] {
        switch command {
        case .up: categoryCursor = max(0, categoryCursor - 1)
        case .down: categoryCursor = min(categories.count, categoryCursor + 1)
        case .top: categoryCursor = 0
        case .bottom: categoryCursor = categories.count
        case .toggle:
            if categoryCursor == categories.count { return subscribe() }
            let name = categories[categoryCursor]
            if switches.contains(name) { switches.remove(name) } else { switches.insert(name) }
        case .subscribe:
            return subscribe()
        default: break
        }
        return []
    }

    private mutating func subscribe() -> [Effect] {
        guard !registering else { return [] }
        registering = true
        storedSelection = switches
        return [.subscribe(categories.filter(switches.contains))]
    }

    // MARK: Compose

    private mutating func composeCommand(_ command: Command) -> [Effect] {
        let count = categories.count
        switch (command, compose.focus) {
        case (.up, .category):
            compose.focus = .text
        case (.up, .send):
            compose.focus = .category(0)
        case (.down, .text):
            compose.focus = .category(0)
        case (.down, .category):
            compose.focus = .send
        case (.left, .category(let i)):
            compose.focus = .category(max(0, i - 1))
        case (.right, .category(let i)):
            compose.focus = .category(min(count - 1, i + 1))
        case (.toggle, .category(let i)):
            compose.checked[i].toggle()
        case (.toggle, .send), (.send, _):
            return send()
        case (.toggleAll, _):
            let all = !compose.checked.allSatisfy { $0 }
            compose.checked = Array(repeating: all, count: count)
        default:
            break
        }
        return []
    }

    /// Keys the text field takes; nil for keys it passes on.
    private mutating func handleTextField(_ key: Key) -> [Effect]? {
        var text = compose.text
        var cursor = min(compose.cursor, text.count)
        switch key {
        case .character(let c):
            text.insert(c, at: cursor)
            cursor += 1
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(text.count, cursor + 1)
        case .home, .control("a"): cursor = 0
        case .end, .control("e"): cursor = text.count
        case .backspace:
            guard cursor > 0 else { return [] }
            text.remove(at: cursor - 1)
            cursor -= 1
        case .delete, .control("d"):
            guard cursor < text.count else { return [] }
            text.remove(at: cursor)
        case .control("u"):
            text.removeFirst(cursor)
            cursor = 0
        case .control("k"):
            text.removeLast(text.count - cursor)
        case .escape, .down:
            compose.focus = .category(0)
            return []
        case .enter:
            return send()
        default:
            return nil
        }
        compose.text = text
        compose.cursor = cursor
        compose.error = nil
        return []
    }

    private mutating func send() -> [Effect] {
        guard !compose.sending else { return [] }
        let chosen = categories.indices.filter { compose.checked[$0] }.map { categories[$0] }
        let text: String
        do {
            text = try Publisher.validate(String(compose.text))
        } catch {
            compose.error = "Cannot send: \(error.description)."
            compose.focus = .text
            return []
        }
        guard !chosen.isEmpty else {
            compose.error = "Cannot send: check at least one category."
            return []
        }
        compose.error = nil
        compose.sending = true
        compose.results = []
        return [.send(text: text, categories: chosen)]
    }

    // MARK: Log

    /// Rows the log list has on screen.
    var geometry: ScreenGeometry { ScreenGeometry(rows: rows, columns: columns) }
    var logPageSize: Int { geometry.logPageSize }

    private mutating func logCommand(_ command: Command) -> [Effect] {
        let count = visibleCount
        switch command {
        case .up: log.cursor -= 1
        case .down: log.cursor += 1
        case .pageUp: log.cursor -= logPageSize
        case .pageDown: log.cursor += logPageSize
        case .top: log.cursor = 0
        case .bottom: log.cursor = count - 1
        case .search:
            log.searching = true
            log.search = ""
            log.searchOrigin = log.cursor
        case .nextMatch: jumpToMatch(from: log.cursor + 1, forward: true)
        case .previousMatch: jumpToMatch(from: log.cursor - 1, forward: false)
        case .cycleFilter:
            let options: [String?] = [nil] + categories.map(Optional.some)
            let current = options.firstIndex(of: log.filter) ?? 0
            log.filter = options[(current + 1) % options.count]
            log.cursor = 0
            log.top = 0
        case .open:
            if let item = visibleItems(log.cursor..<(log.cursor + 1)).first {
                dialog = Dialog(title: "Notification", message: item.entry.text, isError: false)
            }
        default: break
        }
        clampLog()
        return []
    }

    private mutating func handleSearch(_ key: Key) -> [Effect] {
        switch key {
        case .character(let c):
            log.search.append(c)
            jumpToMatch(from: log.searchOrigin, forward: true)
        case .backspace:
            if !log.search.isEmpty { log.search.removeLast() }
            jumpToMatch(from: log.searchOrigin, forward: true)
        case .enter:
            log.searching = false
        case .escape:
            log.searching = false
            log.search = ""
            log.cursor = log.searchOrigin
        default: break
        }
        clampLog()
        return []
    }

    /// Moves the cursor to the nearest entry containing the search text (any case),
    /// wrapping around.
    private mutating func jumpToMatch(from start: Int, forward: Bool) {
        guard !log.search.isEmpty else { return }
        let list = visibleLog
        guard !list.isEmpty else { return }
        let needle = log.search.lowercased()
        for step in 0..<list.count {
            let i = ((forward ? start + step : start - step) % list.count + list.count) % list.count
            if list[i].entry.text.lowercased().contains(needle) || (list[i].entry.category ?? "").lowercased().contains(needle) {
                log.cursor = i
                return
            }
        }
    }

    /// Whether an entry matches the current search (for highlighting).
    public func matchesSearch(_ item: LogItem) -> Bool {
        !log.search.isEmpty && item.entry.text.lowercased().contains(log.search.lowercased())
    }

    mutating func clampLog() {
        let count = visibleCount
        log.cursor = max(0, min(log.cursor, count - 1))
        let page = logPageSize
        if log.cursor < log.top { log.top = log.cursor }
        if log.cursor >= log.top + page { log.top = log.cursor - page + 1 }
        log.top = max(0, min(log.top, max(0, count - page)))
    }

    // MARK: Mouse

    private mutating func handleClick(row: Int, column: Int) -> [Effect] {
        if row == 1 {
            // The tab bar: " 1 Categories   2 Compose   3 Log".
            for (screen, range) in Layout.tabRanges(self) where range.contains(column) { return show(screen) }
            return []
        }
        if screen == .categories, let index = Layout.categoryRow(forScreenRow: row, self) {
            categoryCursor = index
            return categoriesCommand(.toggle)
        }
        return []
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
