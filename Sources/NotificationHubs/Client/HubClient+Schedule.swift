import Foundation

/// Scheduled sends (wire spec §6): accepted now, sent at a time.
extension HubClient {
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
}
