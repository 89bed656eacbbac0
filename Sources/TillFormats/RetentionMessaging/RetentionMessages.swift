/// The Retention Messaging API's messages and images (`/inApps/v1/messaging/…`): what a developer uploads and
/// what the lists answer. Field names and limits are Apple's (header 66 characters, body 144, alternative text 150,
/// bullet point text 66).

/// The state of an uploaded image or message: App Store review (`PENDING`, `APPROVED`, `REJECTED`).
public struct RetentionReviewState: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let pending: RetentionReviewState = "PENDING"
    public static let approved: RetentionReviewState = "APPROVED"
    public static let rejected: RetentionReviewState = "REJECTED"
}

/// Where an image is used: a message's full-size image (3840 px wide, 160–2160 px high) or a bullet point's
/// (1024 × 1024 px).
public struct RetentionImageSize: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let fullSize: RetentionImageSize = "FULL_SIZE"
    public static let bulletPoint: RetentionImageSize = "BULLET_POINT"
}

/// Where a message's header goes.
public struct HeaderPosition: AppleStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let aboveBody: HeaderPosition = "ABOVE_BODY"
    public static let aboveImage: HeaderPosition = "ABOVE_IMAGE"
}

/// An image a message shows, with its alternative text.
public struct UploadMessageImage: Codable, Sendable, Hashable {
    public var imageIdentifier: String?
    public var altText: String?

    public init(imageIdentifier: String? = nil, altText: String? = nil) {
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// One bullet point of a message: its text and its image.
public struct BulletPoint: Codable, Sendable, Hashable {
    public var text: String?
    public var imageIdentifier: String?
    public var altText: String?

    public init(text: String? = nil, imageIdentifier: String? = nil, altText: String? = nil) {
        self.text = text
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// The body of Upload Message (`PUT /inApps/v1/messaging/message/{messageIdentifier}`).
///
/// ```
/// {"header":"Before you go","body":"Your plan includes…","image":{"imageIdentifier":"…","altText":"…"},
///  "headerPosition":"ABOVE_BODY","bulletPoints":[{"text":"…","imageIdentifier":"…","altText":"…"}]}
/// ```
public struct UploadMessageRequestBody: Codable, Sendable, Hashable {
    public var header: String?
    public var body: String?
    public var image: UploadMessageImage?
    public var headerPosition: HeaderPosition?
    public var bulletPoints: [BulletPoint]?

    public init(
        header: String? = nil,
        body: String? = nil,
        image: UploadMessageImage? = nil,
        headerPosition: HeaderPosition? = nil,
        bulletPoints: [BulletPoint]? = nil
    ) {
        self.header = header
        self.body = body
        self.image = image
        self.headerPosition = headerPosition
        self.bulletPoints = bulletPoints
    }
}

/// One image of Get Image List.
public struct GetImageListResponseItem: Codable, Sendable, Hashable {
    public var imageIdentifier: String?
    public var imageState: RetentionReviewState?
    public var imageSize: RetentionImageSize?

    public init(imageIdentifier: String?, imageState: RetentionReviewState?, imageSize: RetentionImageSize?) {
        self.imageIdentifier = imageIdentifier
        self.imageState = imageState
        self.imageSize = imageSize
    }
}

/// The answer of Get Image List.
public struct GetImageListResponse: Codable, Sendable, Hashable {
    public var imageIdentifiers: [GetImageListResponseItem]?

    public init(imageIdentifiers: [GetImageListResponseItem]?) { self.imageIdentifiers = imageIdentifiers }
}

/// One message of Get Message List.
public struct GetMessageListResponseItem: Codable, Sendable, Hashable {
    public var messageIdentifier: String?
    public var messageState: RetentionReviewState?

    public init(messageIdentifier: String?, messageState: RetentionReviewState?) {
        self.messageIdentifier = messageIdentifier
        self.messageState = messageState
    }
}

/// The answer of Get Message List.
public struct GetMessageListResponse: Codable, Sendable, Hashable {
    public var messageIdentifiers: [GetMessageListResponseItem]?

    public init(messageIdentifiers: [GetMessageListResponseItem]?) { self.messageIdentifiers = messageIdentifiers }
}

/// The body of Configure Default Message, and the answer of Get Default Message.
public struct DefaultConfiguration: Codable, Sendable, Hashable {
    public var messageIdentifier: String?

    public init(messageIdentifier: String?) { self.messageIdentifier = messageIdentifier }
}

/// The body of Configure Realtime URL, and the answer of Get Realtime URL.
public struct RealtimeURLConfiguration: Codable, Sendable, Hashable {
    public var realtimeURL: String?

    public init(realtimeURL: String?) { self.realtimeURL = realtimeURL }
}
