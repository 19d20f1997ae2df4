package estimate

// Source material for the generated accuracy corpus (corpus_test.go). The
// generator recombines these pieces deterministically; nothing is
// downloaded.

var proseSentences = []string{
	"The committee met on Tuesday to review the quarterly budget and agreed to postpone the decision until more data was available.",
	"Although the weather forecast predicted rain, the afternoon turned out to be warm and bright, so we walked along the river instead.",
	"Please summarize the following article in three bullet points, focusing on the economic consequences for small businesses.",
	"In 1969, astronauts landed on the Moon, an achievement that required the coordinated effort of roughly 400,000 engineers, scientists and technicians.",
	"She opened the letter carefully, read it twice, and then laughed so loudly that the neighbours came to see what had happened.",
	"Photosynthesis converts light energy into chemical energy, storing it in the bonds of glucose molecules that plants later use for growth.",
	"Could you explain, in simple terms, why interest rates affect the price of long-term government bonds?",
	"The museum's new exhibition features over 200 paintings, sculptures, and photographs from artists who worked in Paris between the wars.",
	"I'm not sure whether the train leaves at 8:15 or 8:45, so let's check the timetable before we pack our bags.",
	"Machine learning models are only as good as the data they are trained on; biased data produces biased predictions.",
	"He argued that the proposal was \"fundamentally flawed\" and that the company should reconsider its entire approach to customer support.",
	"Our team shipped version 2.4.1 last week, which fixes the memory leak reported by several enterprise customers.",
	"The recipe calls for two cups of flour, a teaspoon of baking soda, three eggs, and a generous pinch of salt.",
	"Historians still debate the causes of the war, but most agree that economic pressure and nationalism both played important roles.",
	"When you write to the landlord, mention the broken heater, the leaking window, and the date you first reported the problem.",
	"Antidisestablishmentarianism is often cited as one of the longest words in the English language, though it is rarely used.",
	"The quick brown fox jumps over the lazy dog, a sentence that contains every letter of the alphabet at least once.",
	"According to the report, revenue grew by 12.5% year over year, while operating costs fell by nearly $3 million.",
	"Volunteers planted more than 1,500 trees along the northern edge of the park during the spring cleanup campaign.",
	"Write a polite email declining the invitation, but suggest meeting for coffee sometime next month instead.",
	"The protagonist, a retired lighthouse keeper named Ezekiel Thornbury, discovers a mysterious map hidden behind a loose brick.",
	"Despite its small size, the hummingbird can fly backwards, hover in place, and travel thousands of kilometres during migration.",
	"What are the main differences between a Roth IRA and a traditional IRA, and which one would you recommend for a 25-year-old?",
	"The surgeon explained the procedure step by step, answering every question patiently before asking the patient to sign the consent form.",
	"Electric vehicles have become significantly cheaper over the past decade, largely because battery prices have dropped.",
	"Translate the following paragraph into formal English, keeping the technical vocabulary intact.",
	"Mrs. Okonkwo-Fitzgerald thanked the audience, adjusted her microphone, and began her lecture on post-colonial literature.",
	"Honestly, I think we're overthinking this; let's just try the simplest solution first and see whether it works.",
	"The bridge, completed in 1932, spans 503 metres and was, for a time, the widest long-span bridge in the world.",
	"Researchers at the university observed that participants who slept fewer than six hours performed worse on memory tests.",
	"Kindly review the attached contract and flag any clauses that seem unusual, ambiguous, or unfavourable to us.",
	"Once upon a time, in a village surrounded by dark pine forests, there lived a clockmaker who never slept.",
	"The pharmaceutical company's acquisition, valued at approximately €4.2 billion, is expected to close in the third quarter.",
	"Our customer satisfaction survey received 3,847 responses, with 78 percent rating the service as good or excellent.",
	"Mitochondria are sometimes called the powerhouses of the cell because they generate most of the cell's supply of ATP.",
	"Do you think it's reasonable to expect a junior developer to understand distributed consensus algorithms in their first month?",
	"The orchestra rehearsed Tchaikovsky's Symphony No. 5 for weeks before the premiere at the Philharmonic Hall.",
	"Unfortunately, the shipment was delayed at customs, and the warehouse in Rotterdam won't receive it until Friday.",
	"Incomprehensibilities and counterrevolutionaries appear in crossword puzzles more often than in everyday conversation.",
	"Summarize the key findings, list the limitations, and propose two follow-up experiments that could address them.",
}

var codeSnippets = []string{
	"package main\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n)\n\nfunc handler(w http.ResponseWriter, r *http.Request) {\n\tname := r.URL.Query().Get(\"name\")\n\tif name == \"\" {\n\t\thttp.Error(w, \"missing name\", http.StatusBadRequest)\n\t\treturn\n\t}\n\tfmt.Fprintf(w, \"Hello, %s!\\n\", name)\n}\n",
	"func (s *Store) Reserve(ctx context.Context, key string, n int64) (Hold, error) {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\tb, ok := s.buckets[key]\n\tif !ok {\n\t\tb = newBucket(s.capacity, s.clock.Now())\n\t\ts.buckets[key] = b\n\t}\n\tif err := b.take(n); err != nil {\n\t\treturn Hold{}, fmt.Errorf(\"reserve %q: %w\", key, err)\n\t}\n\treturn Hold{Key: key, Tokens: n}, nil\n}\n",
	"def fibonacci(n: int) -> list[int]:\n    \"\"\"Return the first n Fibonacci numbers.\"\"\"\n    if n <= 0:\n        return []\n    seq = [0, 1]\n    while len(seq) < n:\n        seq.append(seq[-1] + seq[-2])\n    return seq[:n]\n\n\nif __name__ == \"__main__\":\n    print(fibonacci(10))\n",
	"class UserRepository:\n    def __init__(self, session_factory):\n        self._session_factory = session_factory\n\n    def get_by_email(self, email: str) -> Optional[User]:\n        with self._session_factory() as session:\n            return session.query(User).filter(User.email == email.lower()).one_or_none()\n\n    def deactivate(self, user_id: int) -> None:\n        with self._session_factory() as session:\n            session.execute(update(User).where(User.id == user_id).values(active=False))\n            session.commit()\n",
	"import numpy as np\nimport pandas as pd\n\ndf = pd.read_csv('sales_2024.csv', parse_dates=['order_date'])\nmonthly = df.groupby(df['order_date'].dt.to_period('M'))['amount'].sum()\nprint(monthly.describe())\nz = (monthly - monthly.mean()) / monthly.std()\noutliers = monthly[np.abs(z) > 2.5]\n",
	"async function fetchUserProfile(userId) {\n  const response = await fetch(`/api/users/${userId}`, {\n    headers: { 'Authorization': `Bearer ${token}` },\n  });\n  if (!response.ok) {\n    throw new Error(`HTTP ${response.status}: ${response.statusText}`);\n  }\n  const { data } = await response.json();\n  return data;\n}\n",
	"export const debounce = (fn, wait = 300) => {\n  let timeoutId;\n  return (...args) => {\n    clearTimeout(timeoutId);\n    timeoutId = setTimeout(() => fn.apply(this, args), wait);\n  };\n};\n\ndocument.querySelector('#search').addEventListener('input', debounce((e) => {\n  renderResults(e.target.value.trim());\n}));\n",
	"const express = require('express');\nconst app = express();\napp.use(express.json());\n\napp.post('/v1/items', (req, res) => {\n  const { name, price } = req.body;\n  if (typeof price !== 'number' || price < 0) {\n    return res.status(400).json({ error: 'invalid price' });\n  }\n  items.push({ id: items.length + 1, name, price });\n  res.status(201).json(items[items.length - 1]);\n});\n",
	"type TokenBucket struct {\n\tCapacity   int64\n\tRefillRate float64 // tokens per second\n\tlevel      float64\n\tupdatedAt  time.Time\n}\n\nfunc (b *TokenBucket) refill(now time.Time) {\n\telapsed := now.Sub(b.updatedAt).Seconds()\n\tb.level = math.Min(float64(b.Capacity), b.level+elapsed*b.RefillRate)\n\tb.updatedAt = now\n}\n",
	"SELECT u.id, u.email, COUNT(o.id) AS order_count, SUM(o.total_cents) / 100.0 AS revenue\nFROM users u\nLEFT JOIN orders o ON o.user_id = u.id AND o.created_at >= NOW() - INTERVAL '30 days'\nWHERE u.deleted_at IS NULL\nGROUP BY u.id, u.email\nHAVING COUNT(o.id) > 3\nORDER BY revenue DESC\nLIMIT 50;\n",
	"#!/usr/bin/env bash\nset -euo pipefail\n\nfor f in ./logs/*.log; do\n  if grep -q 'ERROR' \"$f\"; then\n    echo \"[$(date +%H:%M:%S)] errors in ${f##*/}\" >&2\n    gzip -9 \"$f\"\n  fi\ndone\n",
	"interface Props {\n  items: ReadonlyArray<{ id: string; label: string }>;\n  onSelect?: (id: string) => void;\n}\n\nexport function List({ items, onSelect }: Props) {\n  return (\n    <ul className=\"list\">\n      {items.map((it) => (\n        <li key={it.id} onClick={() => onSelect?.(it.id)}>{it.label}</li>\n      ))}\n    </ul>\n  );\n}\n",
	"@pytest.mark.parametrize(\"value,expected\", [(\"32000\", 32000), (\"1e3\", 1000), (\"-5\", None)])\ndef test_parse_ceiling(value, expected):\n    assert parse_ceiling(value) == expected\n",
	"for i, line := range strings.Split(string(data), \"\\n\") {\n\tfields := strings.Fields(line)\n\tif len(fields) < 3 || strings.HasPrefix(fields[0], \"#\") {\n\t\tcontinue\n\t}\n\tcounts[fields[2]]++\n\tlog.Printf(\"line %d: %v\", i+1, fields)\n}\n",
	"fn main() -> Result<(), Box<dyn std::error::Error>> {\n    let args: Vec<String> = std::env::args().collect();\n    let path = args.get(1).ok_or(\"usage: wc <file>\")?;\n    let text = std::fs::read_to_string(path)?;\n    println!(\"{} {}\", text.lines().count(), text.split_whitespace().count());\n    Ok(())\n}\n",
}

var chineseSentences = []string{
	"人工智能正在改变世界的每一个角落，我们需要认真思考它带来的机遇与挑战。",
	"请帮我把下面这段话翻译成英文，并保持原文的语气。",
	"北京是中国的首都，也是一座拥有三千多年历史的古老城市。",
	"这家公司去年的营业收入增长了百分之十二，利润却略有下降。",
	"我们明天早上九点在会议室讨论新产品的发布计划。",
	"春天来了，公园里的花都开了，很多人带着孩子出来散步。",
	"如果你有任何问题，请随时通过电子邮件与我们联系。",
	"学习一门新的编程语言最好的方法是动手写一个小项目。",
}

var japaneseSentences = []string{
	"今日は天気がいいので、公園に散歩に行きました。",
	"この文章を日本語から英語に翻訳してください。",
	"東京は日本の首都で、世界有数の大都市です。",
	"カタカナで書かれたコンピューター用語はとても多いです。",
	"明日の会議は午後三時から始まる予定ですので、資料を準備しておいてください。",
	"桜の季節になると、多くの人がお花見を楽しみます。",
	"ご不明な点がございましたら、お気軽にお問い合わせください。",
}

var koreanSentences = []string{
	"안녕하세요. 오늘 날씨가 정말 좋네요.",
	"이 문장을 영어로 번역해 주시겠어요?",
	"서울은 대한민국의 수도이며 인구가 약 천만 명입니다.",
	"회의는 내일 오후 세 시에 시작할 예정입니다.",
	"한국어 문장을 토큰화하면 어떻게 될까요?",
	"궁금한 점이 있으시면 언제든지 연락해 주세요.",
	"인공지능 기술은 우리의 일상생활을 빠르게 변화시키고 있습니다.",
}

var otherScriptSentences = []string{
	"Привет, как дела? Это тестовое предложение на русском языке.",
	"Съешь же ещё этих мягких французских булок, да выпей чаю.",
	"مرحبا بالعالم، هذا نص تجريبي باللغة العربية.",
	"Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
	"שלום עולם, זהו משפט לדוגמה בעברית.",
	"Le café est très chaud, mais la crème brûlée était délicieuse à Noël.",
	"Über den Wolken muss die Freiheit wohl grenzenlos sein, sagte der Müller.",
	"¿Dónde está la estación de tren más cercana? ¡Gracias, señor!",
	"Việt Nam là một quốc gia nằm ở phía đông bán đảo Đông Dương.",
	"नमस्ते, आप कैसे हैं? यह हिंदी में एक वाक्य है।",
	"สวัสดีครับ วันนี้อากาศดีมาก",
}

var emojis = []string{
	"😀", "😂", "🥰", "😍", "🤩", "😎", "🤔", "🙄", "😭", "🔥", "✨", "🎉", "👍", "👍🏽", "👋🏿", "🙏",
	"❤️", "💯", "🚀", "🌈", "🍕", "☕", "🐶", "🦄", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🇯🇵", "🇺🇸", "✅", "❌", "⚠️",
	"🤷‍♂️", "🧑‍🚀", "😶‍🌫️", "🫠", "🪐", "💩", "🙈", "🥲",
}

// The prose classes "korean", "japanese" and "chinese" are made of these
// sentences, written for this corpus: everyday, business and technical
// registers, with the numbers, Latin words and punctuation such text carries.
var koreanProse = []string{
	"지난주에 새로 문을 연 동네 빵집에 다녀왔는데, 크루아상이 생각보다 훨씬 맛있었어요.",
	"이번 분기 매출은 전년 동기 대비 8.5% 증가했지만, 원자재 가격 상승으로 영업이익은 다소 줄었습니다.",
	"서버 로그를 확인해 보니 새벽 세 시쯤 데이터베이스 연결이 여러 번 끊어진 것으로 보입니다.",
	"아이들이 방학을 맞아 할머니 댁에 놀러 가서 매일 강가에서 물고기를 잡으며 지냈다고 합니다.",
	"회의 자료는 공유 폴더에 올려 두었으니 내일 오전까지 검토해 주시면 감사하겠습니다.",
	"요즘은 스마트폰 하나로 은행 업무부터 병원 예약까지 거의 모든 일을 처리할 수 있습니다.",
	"이 함수는 입력값이 비어 있으면 오류를 반환하고, 그렇지 않으면 결과를 캐시에 저장합니다.",
	"주말마다 산에 오르는 것이 제 유일한 취미인데, 가을 단풍이 들 때가 가장 아름답습니다.",
	"고객님께서 문의하신 주문은 현재 배송 중이며, 모레 오후까지 도착할 예정입니다.",
	"기후 변화에 대응하기 위해 많은 도시가 대중교통을 확충하고 자전거 도로를 늘리고 있습니다.",
	"처음 프로그래밍을 배울 때는 작은 프로젝트를 끝까지 완성해 보는 경험이 무엇보다 중요합니다.",
	"할머니께서 해 주시던 된장찌개 맛을 떠올리며 오랜만에 직접 요리를 해 보았습니다.",
	"새 정책에 따르면 모든 직원은 연간 최소 20시간의 보안 교육을 이수해야 합니다.",
	"도서관에서 빌린 책을 반납하려고 했는데 마침 휴관일이라 다시 돌아와야 했어요.",
	"우리 팀은 다음 달 출시를 목표로 사용자 인터페이스를 전면 개편하고 있습니다.",
	"비가 그친 뒤 하늘에 커다란 무지개가 떠서 사람들이 모두 걸음을 멈추고 사진을 찍었습니다.",
}

var japaneseProse = []string{
	"先週末、友人と一緒に京都の古いお寺を巡り、静かな庭園で抹茶をいただきました。",
	"今期の売上高は前年同期比で7.3%増加しましたが、物流費の上昇により利益は横ばいでした。",
	"このエラーは、設定ファイルのパスが正しく指定されていない場合に発生することがあります。",
	"駅前の新しいカフェは、朝七時から営業しているので通勤前に立ち寄る人が多いそうです。",
	"申し訳ございませんが、ご注文の商品は現在在庫切れとなっており、入荷は来月中旬の予定です。",
	"子どもの頃、夏休みになると祖父母の家で毎日のように川遊びをしていたことを思い出します。",
	"新しいシステムへの移行に伴い、来週の月曜日から一部のサービスが一時的に利用できなくなります。",
	"彼女は大学でデータサイエンスを専攻し、卒業後は医療分野の研究機関に就職しました。",
	"雨の日には、家でゆっくり本を読みながら温かいコーヒーを飲むのが一番の楽しみです。",
	"この関数は引数が空の場合に例外を投げ、それ以外の場合は結果をキャッシュに保存します。",
	"地域の図書館では、毎月第二土曜日に子ども向けの読み聞かせ会を開いています。",
	"プロジェクトの締め切りが近づいているため、今週は残業が続くかもしれません。",
	"富士山の山頂から見た日の出は、言葉では表せないほど美しい光景でした。",
	"オンライン会議のリンクは、開始の十分前にメールでお送りいたします。",
	"環境への配慮から、多くの企業がプラスチック製の包装材を見直し始めています。",
}

var chineseProse = []string{
	"上个周末我和家人去郊外爬山，山顶的风景非常美，我们拍了很多照片。",
	"本季度公司的营业收入同比增长百分之九点二，但由于原材料价格上涨，净利润略有下滑。",
	"如果程序在启动时报错，请先检查配置文件中的数据库地址和端口是否正确。",
	"这座城市的地铁网络四通八达，大多数居民每天都乘坐地铁上下班。",
	"非常抱歉，您订购的商品目前缺货，预计下个月中旬才能重新发货。",
	"小时候每到暑假，我都会去外婆家住上一个月，每天在河边捉鱼、在田里玩耍。",
	"为了应对气候变化，越来越多的城市开始推广电动公交车和共享单车。",
	"她大学毕业后在一家医疗科技公司工作，主要负责分析患者数据并改进诊断模型。",
	"下雨的时候，我喜欢待在家里，一边喝热茶一边读一本好书。",
	"这个函数在参数为空时会返回错误，否则会把计算结果写入缓存。",
	"图书馆每个月的第一个星期六都会为孩子们举办讲故事活动。",
	"由于项目的截止日期快到了，这周团队成员可能需要经常加班。",
	"从泰山之巅看日出，那种壮丽的景象让人终生难忘。",
	"线上会议的链接将在开始前十分钟通过电子邮件发送给各位参会者。",
	"出于环保考虑，许多企业正在减少塑料包装的使用，改用可降解材料。",
}
