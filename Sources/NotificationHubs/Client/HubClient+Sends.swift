import Foundation

/// Scheduled sends and direct batches (wire spec §6).
extension HubClient {
    /// `POST /{hub}/messages/$batch?direct`: a native payload to up to 1,000 handles at once.
    public func sendDirectBatch(_ notification: HubNotification, deviceHandles: [String]) async throws(HubError)
        -> SendReceipt
    {
        let (contentType, body) = DirectBatch(payload: notification.body, devices: deviceHandles).multipart()
        var headers = ["ServiceBusNotification-Format": notification.format.rawValue]
        if case .apple(_, let apnsHeaders) = notification {
            for (name, value) in apnsHeaders { headers[name] = value }
        }
        let response = try await call(
            .POST, "messages/$batch", query: ["direct"], headers: headers, body: body, contentType: contentType,
            expect: [200, 201])
        var receipt = SendReceipt(location: response.location, trackingId: response.trackingId)
        receipt.notificationId = response.location.flatMap(Self.lastPathSegment)
        return receipt
    }

    /// `POST /{hub}/schedulednotifications`: sends at `time` (sent as UTC in .NET's form,
    /// `yyyy-MM-ddTHH:mm:ss`); the receipt's id cancels it and reads its telemetry.
    public func scheduleSend(_ notification: HubNotification, tagExpression: String? = nil, at time: Date)
        async throws(HubError) -> SendReceipt
    {
        try await send(
            notification, tagExpression: tagExpression, query: [],
            extraHeaders: ["ServiceBusNotification-ScheduleTime": String(W3CDate.format(time).prefix(19))],
            resource: "schedulednotifications")
    }

    /// `DELETE /{hub}/schedulednotifications/{id}`: cancels a scheduled send that has not
    /// been sent (404 once it has, or was cancelled).
    public func cancelScheduledSend(id: String) async throws(HubError) {
        _ = try await call(.DELETE, "schedulednotifications/\(Self.segment(id))", expect: [200, 204])
    }

    /// The local hub's explanation of a send (Manage): what it matched and what became of
    /// each device, in plain words. Azure has no such resource (404).
    public func explain(id: String) async throws(HubError) -> SendExplanation {
        let response = try await call(.GET, "/_inspect/\(Self.segment(hubName))/messages/\(Self.segment(id))", expect: [200])
        do {
            return try SendExplanation(json: JSONValue(parsing: response.body))
        } catch {
            throw HubError(.invalidResponse, detail: "the explanation is unreadable: \(error)", trackingId: response.trackingId)
        }
    }
}
