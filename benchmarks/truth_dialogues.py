"""The phrases of :mod:`benchmarks.truth`'s dialogues, in English and Chinese: what users say, what the assistant answers.

Each slot is one fact a user states: a preference that may change (drink, editor, city, phone, weekend hobby), a
project decision that may be reversed (database, meeting time, hosting, launch date), or a constraint that holds
(allergy, health condition, a data rule of the project, diet). ``state`` phrases say a value the first time,
``change`` phrases say a new one (they often name the old one too, as people do), ``ack`` phrases are the
assistant's replies (with ``{v}`` they repeat the value). ``question`` asks for the current value; ``read`` is what
the user asks between sessions; constraints have ``tasks`` instead: requests whose answer should respect them.
``keywords`` say how a value shows in a note's text (default: the value itself, case-insensitive).

``JOINT`` phrases state two slots in one turn ("I'm vegetarian and I hate cilantro"); ``FILLER`` is everyday
chatter that names no value of any slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PREFERENCE, DECISION, CONSTRAINT = "preference", "decision", "constraint"
KINDS = (PREFERENCE, DECISION, CONSTRAINT)


@dataclass(frozen=True)
class Slot:
    kind: str
    pool: tuple[str, ...]
    state: tuple[str, ...]  # {v}, {project}
    change: tuple[str, ...]  # {old}, {new}, {project}; empty: the value never changes
    ack: tuple[str, ...]  # {v}: the assistant repeats the value
    question: str
    read: str = ""
    tasks: tuple[str, ...] = ()
    keywords: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def words(self, value: str) -> tuple[str, ...]:
        return self.keywords.get(value, (value,))


EN: dict[str, Slot] = {
    "drink": Slot(
        PREFERENCE,
        ("green tea", "black coffee", "oolong tea", "hot chocolate", "matcha latte", "chai", "sparkling water",
         "flat white"),
        ("I basically run on {v}, I have some before I even open my laptop.",
         "My go-to drink is {v}, I have it all day long."),
        ("Small update: I've switched from {old} to {new}, {old} just wasn't doing it for me anymore.",
         "These days it's {new} for me, I've pretty much stopped drinking {old}."),
        ("{v}, noted!", "Got it.", "Good to know, I'll remember that."),
        "What do I usually drink these days?", "I'm stopping by the café, what should I order?"),
    "editor": Slot(
        PREFERENCE, ("Vim", "VS Code", "Emacs", "Sublime Text", "IntelliJ", "Zed", "Helix"),
        ("I do all my coding in {v}, I've spent years tweaking my setup.",
         "My editor of choice is {v}, so please give me shortcuts for that."),
        ("I finally gave up on {old}, I'm using {new} for everything now.",
         "Switched editors this month: {new} instead of {old}. So far so good."),
        ("{v} it is, I'll give shortcuts for that.", "Got it.", "Makes sense, thanks for telling me."),
        "Which code editor do I use?", "How do I rename a variable everywhere in my editor?"),
    "city": Slot(
        PREFERENCE, ("Lisbon", "Berlin", "Toronto", "Melbourne", "Austin", "Dublin", "Seoul", "Denver", "Edinburgh"),
        ("I live in {v}, I've been here about five years now.",
         "I've lived in {v} for a few years and I really like it."),
        ("Big news: I moved to {new}! Leaving {old} was hard, but the new flat is lovely.",
         "I'm all settled in {new} now, the move from {old} went smoothly."),
        ("{v} sounds lovely.", "Congratulations!", "Good to know."),
        "Which city do I live in now?", "Any ideas for things to do in my city this weekend?"),
    "phone": Slot(
        PREFERENCE, ("iPhone", "Pixel", "Samsung Galaxy", "Fairphone", "OnePlus", "Nokia"),
        ("My phone is an old {v}, so any app you suggest has to work on that.",
         "I've had my {v} for a few years now and it's still fine."),
        ("My {old} finally died, so I got myself a new {new}.",
         "I switched from my {old} to the new {new} last week, still getting used to it."),
        ("{v}, noted.", "Okay!", "Good to know, I'll keep app suggestions compatible."),
        "What phone do I have now?", "Recommend a good podcast app for my phone."),
    "hobby": Slot(
        PREFERENCE, ("bouldering", "sailing", "salsa dancing", "pottery", "swimming", "chess club", "woodworking"),
        ("Saturdays are for {v}, it's how I switch off.", "My weekend thing is {v}, I never miss it."),
        ("I've stopped doing {old}; Saturdays are for {new} now.",
         "I swapped {old} for {new} on weekends, it's a nice change."),
        ("{v} sounds like fun!", "Nice!", "That's a great way to unwind."),
        "What do I do on Saturdays now?", "Help me plan my Saturday."),
    "database": Slot(
        DECISION, ("PostgreSQL", "MySQL", "MongoDB", "SQLite", "DynamoDB", "Cassandra"),
        ("For {project} we decided to go with {v} as the main database.",
         "The team agreed: {project} will run on {v}."),
        ("Change of plan on {project}: we're switching the database from {old} to {new}.",
         "We're migrating {project} off {old}; {new} is the database from now on."),
        ("Makes sense. {v} for {project}, noted.", "Okay, I'll keep that in mind for {project}."),
        "What database does {project} use?", "Draft a backup plan for the {project} database."),
    "meeting": Slot(
        DECISION, ("Monday at 10am", "Tuesday at 2pm", "Wednesday at 9am", "Thursday at 4pm", "Friday at 11am"),
        ("Our {project} sync is every {v}.", "The weekly {project} meeting is on {v}, please remind me."),
        ("Heads up, the {project} sync moved from {old} to {new}, starting this week.",
         "We moved the {project} meeting to {new}; {old} clashed with too many things."),
        ("{v}, got it. I'll remind you.", "Noted."),
        "When is the {project} sync meeting?", "What's on my calendar with the {project} team?",
        keywords={"Monday at 10am": ("monday",), "Tuesday at 2pm": ("tuesday",), "Wednesday at 9am": ("wednesday",),
                  "Thursday at 4pm": ("thursday",), "Friday at 11am": ("friday",)}),
    "hosting": Slot(
        DECISION, ("AWS", "Google Cloud", "Azure", "Hetzner", "DigitalOcean", "Fly.io"),
        ("{project} is hosted on {v}, the whole stack lives there.", "We deploy {project} to {v}."),
        ("We're moving {project} off {old} and onto {new}, the bill was getting silly.",
         "{project} now runs on {new}; the migration from {old} finished yesterday."),
        ("{v}, okay.", "Thanks, noted for {project}."),
        "Where is {project} hosted?", "What do I need to check before deploying {project}?"),
    "launch": Slot(
        DECISION, ("March 14", "April 2", "May 20", "June 9", "July 1", "September 15"),
        ("We're aiming to launch {project} on {v}.", "The {project} launch date is set: {v}."),
        ("The {project} launch slipped from {old} to {new}, QA found a nasty bug.",
         "New plan: {project} goes live on {new} instead of {old}."),
        ("{v}, I'll keep that in mind.", "Good luck with the launch!"),
        "When does {project} launch?", "How much time is left before the {project} launch?"),
    "allergy": Slot(
        CONSTRAINT, ("peanuts", "shellfish", "sesame", "tree nuts", "kiwi", "eggs"),
        ("Important: I'm allergic to {v}, properly allergic, I carry an EpiPen.",
         "Please remember I can't eat {v}, I'm seriously allergic."),
        (),
        ("Thanks for telling me, I'll make sure nothing I suggest contains {v}.",
         "Understood, that's important. I'll keep it in mind."),
        "Do I have any food allergies?",
        tasks=("What should I cook for dinner tonight?", "Suggest a snack I can take on a long flight.",
               "Plan a picnic menu for me."),
        keywords={"peanuts": ("peanut",), "tree nuts": ("tree nut",), "eggs": ("egg",)}),
    "health": Slot(
        CONSTRAINT, ("asthma", "type 1 diabetes", "high blood pressure", "a herniated disc", "a bad knee"),
        ("I have {v}, so my doctor wants me to be careful with exercise.",
         "Something you should know: I have {v}, so keep that in mind when you suggest activities."),
        (),
        ("Thanks for sharing that, I'll keep it in mind.", "Understood, I'll be careful with anything strenuous."),
        "Do I have any health conditions you should know about?",
        tasks=("Put together a workout plan for me.", "Suggest an active holiday for me.",
               "Which sports could I try this year?"),
        keywords={"type 1 diabetes": ("diabetes",), "high blood pressure": ("blood pressure",),
                  "a herniated disc": ("herniated disc",), "a bad knee": ("knee",)}),
    "data_rule": Slot(
        CONSTRAINT, ("phone numbers", "credit card numbers", "home addresses", "passport numbers", "dates of birth"),
        ("One hard rule for {project}: we must not store customers' {v}, legal was very clear about it.",
         "Reminder for {project}: never store users' {v} anywhere, not even in logs."),
        (),
        ("Understood, no {v} in {project}.", "Got it, that's an important rule."),
        "What data must we never store in {project}?",
        tasks=("Which fields should the {project} signup form collect?", "Design the user table for {project}.",
               "What should the {project} customer export contain?"),
        keywords={"dates of birth": ("date of birth", "dates of birth", "birth date")}),
    "diet": Slot(
        CONSTRAINT, ("vegetarian", "vegan", "pescatarian", "halal", "gluten-free"),
        (), (), (),
        "What's my diet?",
        tasks=("Pick a restaurant for my birthday dinner.", "What should I cook for dinner tonight?",
               "Suggest a recipe for this weekend.")),
    "dislike": Slot(
        PREFERENCE, ("cilantro", "olives", "mushrooms", "blue cheese", "anchovies", "raw onion"),
        (), (), (),
        "Which ingredient do I hate?", "What should I put on my pizza tonight?",
        keywords={"mushrooms": ("mushroom",), "olives": ("olive",), "anchovies": ("anchov",)}),
}

ZH: dict[str, Slot] = {
    "drink": Slot(
        PREFERENCE, ("绿茶", "黑咖啡", "乌龙茶", "豆浆", "热可可", "普洱茶", "柠檬水", "拿铁"),
        ("我每天早上都要喝{v}，不喝就没精神。", "我平时最爱喝{v}，一天能喝好几杯。"),
        ("跟你说一下，我最近不喝{old}了，改喝{new}。", "我现在每天喝{new}，{old}基本不碰了。"),
        ("好的，{v}，记住了。", "明白了。", "好的，我记下了。"),
        "我现在平时喝什么？", "我要去咖啡馆了，帮我点一杯喝的吧。"),
    "editor": Slot(
        PREFERENCE, ("Vim", "VS Code", "Emacs", "Sublime Text", "IntelliJ", "Zed", "Helix"),
        ("我写代码一直用{v}，配置都调了好几年了。", "我习惯用{v}写代码，快捷键请按这个来。"),
        ("我终于不用{old}了，现在全部换成{new}。", "这个月换了编辑器，从{old}换到了{new}，用着还不错。"),
        ("好的，以后按{v}的快捷键来。", "明白。", "好的，谢谢告诉我。"),
        "我写代码用什么编辑器？", "在我的编辑器里怎么批量重命名变量？"),
    "city": Slot(
        PREFERENCE, ("杭州", "成都", "西安", "青岛", "厦门", "苏州", "昆明", "武汉", "南京", "深圳"),
        ("我住在{v}，已经五年多了。", "我在{v}生活好几年了，挺喜欢这里的。"),
        ("告诉你个好消息，我搬到{new}了！离开{old}还挺舍不得的。", "我已经在{new}安顿下来了，从{old}搬过来很顺利。"),
        ("{v}是个好地方。", "恭喜恭喜！", "好的，知道了。"),
        "我现在住在哪个城市？", "这个周末我在本地可以去哪儿玩？"),
    "phone": Slot(
        PREFERENCE, ("华为", "小米", "iPhone", "OPPO", "vivo", "荣耀"),
        ("我用的是{v}手机，推荐的应用要能在上面用。", "我的手机是{v}的，用了好几年了。"),
        ("我的{old}手机彻底坏了，新买了一台{new}。", "上周我把{old}换成了{new}，还在适应中。"),
        ("好的，{v}，记下了。", "好的！", "明白，推荐应用的时候我会注意兼容。"),
        "我现在用的是什么手机？", "给我的手机推荐一个好用的播客应用。"),
    "hobby": Slot(
        PREFERENCE, ("攀岩", "游泳", "书法", "陶艺", "羽毛球", "围棋", "木工"),
        ("我周末的固定安排是{v}，雷打不动。", "每个周六我都会花半天时间在{v}上。"),
        ("{old}我已经没在搞了，现在周六的安排换成了{new}。", "周末我把{old}换成了{new}，感觉挺新鲜的。"),
        ("{v}听起来很有意思！", "不错！", "这是很好的放松方式。"),
        "我现在周六一般做什么？", "帮我安排一下这个周六。"),
    "database": Slot(
        DECISION, ("PostgreSQL", "MySQL", "MongoDB", "SQLite", "TiDB", "OceanBase"),
        ("{project}项目我们决定用{v}做主数据库。", "团队定下来了，{project}的数据库用{v}。"),
        ("{project}那边改主意了，数据库从{old}换成{new}。", "{project}正在从{old}迁移到{new}，以后就用{new}了。"),
        ("明白，{project}用{v}，记下了。", "好的，{project}的事我记住了。"),
        "{project}用的是什么数据库？", "帮我写一份{project}数据库的备份方案。"),
    "meeting": Slot(
        DECISION, ("周一上午十点", "周二下午两点", "周三上午九点", "周四下午四点", "周五上午十一点"),
        ("{project}的例会定在每{v}。", "{project}每周的例会是{v}，记得提醒我。"),
        ("{project}的例会从{old}改到{new}了，这周开始。", "我们把{project}的例会挪到了{new}，{old}冲突太多。"),
        ("好的，{v}，到时候提醒你。", "记下了。"),
        "{project}的例会是什么时候？", "我和{project}团队这周有什么安排？",
        keywords={"周一上午十点": ("周一",), "周二下午两点": ("周二",), "周三上午九点": ("周三",),
                  "周四下午四点": ("周四",), "周五上午十一点": ("周五",)}),
    "hosting": Slot(
        DECISION, ("阿里云", "腾讯云", "AWS", "Azure", "百度智能云", "火山引擎"),
        ("{project}部署在{v}上，整套服务都在那边。", "我们把{project}放在{v}上运行。"),
        ("{project}要从{old}迁到{new}了，账单实在太贵。", "{project}已经跑在{new}上了，从{old}的迁移昨天刚完成。"),
        ("好的，{v}。", "谢谢，{project}的情况我记下了。"),
        "{project}部署在哪个云上？", "部署{project}之前我需要检查些什么？"),
    "launch": Slot(
        DECISION, ("三月十四日", "四月二日", "五月二十日", "六月九日", "七月一日", "九月十五日"),
        ("{project}计划在{v}上线。", "{project}的上线日期定了，{v}。"),
        ("{project}的上线时间从{old}推迟到{new}了，测试发现了一个严重的bug。", "新计划：{project}改在{new}上线，不是{old}了。"),
        ("{v}，我记住了。", "祝上线顺利！"),
        "{project}什么时候上线？", "离{project}上线还有多少时间？"),
    "allergy": Slot(
        CONSTRAINT, ("花生", "海鲜", "芝麻", "坚果", "芒果", "鸡蛋"),
        ("我对{v}过敏，挺严重的，你一定要记住。", "提醒你一下，我吃不了{v}，一吃就过敏。"),
        (),
        ("好的，我记住了，推荐吃的时候会避开{v}。", "明白，这个很重要，我会注意的。"),
        "我对什么食物过敏？",
        tasks=("今晚做什么菜好？", "帮我准备一些坐长途飞机吃的零食。", "帮我安排一个野餐的菜单。")),
    "health": Slot(
        CONSTRAINT, ("哮喘", "糖尿病", "高血压", "腰椎间盘突出", "心脏病"),
        ("我有{v}，医生让我运动的时候多注意。", "有件事你得知道：我有{v}，安排活动的时候考虑一下。"),
        (),
        ("谢谢你告诉我，我会记住的。", "明白，我会避开太剧烈的活动。"),
        "我有什么需要注意的健康问题？",
        tasks=("帮我制定一个健身计划。", "推荐一个适合我的运动型假期。", "今年我可以尝试哪些运动？")),
    "data_rule": Slot(
        CONSTRAINT, ("手机号", "身份证号", "银行卡号", "家庭住址", "出生日期"),
        ("{project}有一条硬规定：绝对不能存用户的{v}，法务强调过好几次。", "提醒一下，{project}里任何地方都不许存用户的{v}，日志里也不行。"),
        (),
        ("明白，{project}里不存{v}。", "好的，这条规定很重要，我记住了。"),
        "{project}里哪些数据绝对不能存？",
        tasks=("{project}的注册表单应该收集哪些字段？", "帮我设计一下{project}的用户表。", "{project}的客户导出文件应该包含哪些内容？")),
    "diet": Slot(
        CONSTRAINT, ("吃素", "吃清真", "不吃猪肉", "不吃牛肉", "不吃辣"),
        (), (), (),
        "我的饮食有什么讲究？",
        tasks=("帮我选一家过生日吃饭的餐厅。", "今晚做什么菜好？", "推荐一个这个周末可以做的菜谱。"),
        keywords={"吃素": ("素",), "吃清真": ("清真",), "不吃猪肉": ("猪肉",), "不吃牛肉": ("牛肉",), "不吃辣": ("辣",)}),
    "dislike": Slot(
        PREFERENCE, ("香菜", "榴莲", "苦瓜", "茄子", "芹菜", "肥肉"),
        (), (), (),
        "我最讨厌吃什么？", "今晚的火锅点些什么菜？"),
}

# Two slots stated in one turn. "state": both first values ({a}, {b}); "change": both new values ({a_old}, {a_new},
# {b_old}, {b_new}). diet+dislike is always stated this way; the others when both fall in the same session.
JOINT: dict[str, dict[tuple[str, str, str], tuple[str, ...]]] = {
    "en": {
        ("state", "diet", "dislike"): ("I'm {a} and I hate {b}.", "I'm {a}, and honestly I can't stand {b}.",
                                       "Two things about food: I'm {a}, and I really dislike {b}."),
        ("state", "allergy", "health"): ("Two health things you should know: I'm allergic to {a}, and I have {b}.",),
        ("state", "database", "data_rule"): ("For {project} we picked {a}, and we must never store customers' {b} "
                                             "in it.",),
        ("change", "city", "drink"): ("New city, new habits: I moved from {a_old} to {a_new}, and I've switched from "
                                      "{b_old} to {b_new}.",
                                      "Since I moved to {a_new} I've stopped drinking {b_old}, it's {b_new} every "
                                      "morning now."),
        ("change", "database", "hosting"): ("Big {project} change: we're moving from {a_old} on {b_old} to {a_new} on "
                                            "{b_new}.",),
    },
    "zh": {
        ("state", "diet", "dislike"): ("我{a}，而且特别讨厌{b}。", "跟你说下我的口味：我{a}，{b}一口都不碰。",
                                       "吃的方面：我{a}，还有我很讨厌{b}。"),
        ("state", "allergy", "health"): ("有两件健康方面的事你要知道：我对{a}过敏，而且我有{b}。",),
        ("state", "database", "data_rule"): ("{project}我们选了{a}，而且里面绝对不能存用户的{b}。",),
        ("change", "city", "drink"): ("搬到{a_new}以后，生活习惯也变了：{b_old}不喝了，现在每天喝{b_new}。",),
        ("change", "database", "hosting"): ("{project}大调整：从{b_old}上的{a_old}换成{b_new}上的{a_new}。",),
    },
}
JOINT_ACK = {"en": ("Noted, all of that.", "Thanks, I've got both of those."), "zh": ("好的，都记下了。", "明白，两件事我都记住了。")}

NAMES = {"en": ("Maya", "Daniel", "Priya", "Tom", "Sofia", "Liam", "Grace", "Omar", "Hannah", "Lucas"),
         "zh": ("小王", "李娜", "张伟", "陈静", "刘洋", "王芳", "赵磊", "孙悦", "周杰", "吴敏")}
PROJECTS = {"en": ("Atlas", "Orion", "Beacon", "Nimbus", "Falcon", "Harbor", "Juniper", "Quartz", "Meridian", "Tundra"),
            "zh": ("星河", "天枢", "青鸟", "北斗", "灯塔", "远航", "磐石", "云帆", "启明", "长风")}

GREETING = {"en": (("Morning! Got a minute?", "Hi {name}! Of course, what's on your mind?"),
                   ("Hey, it's me again.", "Hi {name}, good to hear from you. How are things?"),
                   ("Hi! Quick catch-up?", "Sure, {name}. Go ahead.")),
            "zh": (("早上好！有空吗？", "你好，{name}！当然有空，想聊点什么？"),
                   ("又来找你聊聊。", "你好，{name}，最近怎么样？"),
                   ("在吗？有几件事跟你说。", "在的，{name}，你说。"))}
CLOSING = {"en": (("That's all for today, thanks!", "Anytime, {name}. Have a good evening!"),
                  ("Okay, talk soon.", "Talk soon, {name}!")),
           "zh": (("今天就先这样，谢谢！", "不客气，{name}，祝你今天愉快！"),
                  ("好啦，回头再聊。", "好的，{name}，回头见！"))}

FILLER: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        ("Ugh, the printer at the office jammed three times this morning.",
         "Printers have a sixth sense for deadlines. Did you get it working in the end?"),
        ("I finally finished that long novel I was reading, the ending was a letdown.",
         "That's frustrating after investing so much time. What didn't work for you?"),
        ("My nephew turns seven soon and I have no idea what to get him.",
         "Seven is a fun age. Is he into building things, drawing, or games?"),
        ("The neighbours started renovating, so it's drilling from eight in the morning.",
         "That sounds exhausting. Noise-cancelling headphones might save your sanity."),
        ("I've been trying to get to bed earlier, it's going okay.",
         "Small steps count. Even half an hour earlier makes a difference over a few weeks."),
        ("My laptop battery barely lasts two hours now.",
         "It might be time for a new battery; that's usually cheaper than a new laptop."),
        ("We had a fire drill at work and it took forever to get everyone back inside.",
         "At least everyone knows the exits now!"),
        ("I need to renew my passport before the summer.", "Good idea to do it early, processing can take a while."),
        ("I watched a documentary about octopuses last night, they're so clever.",
         "They really are. Some can open jars from the inside."),
        ("The train was cancelled again, I had to take a taxi.",
         "That's annoying and expensive. Maybe check the alerts before you leave."),
        ("I'm thinking of repainting the living room, maybe a soft green.",
         "A soft green can make a room feel calm. Try a sample patch first."),
        ("My sister just had a baby girl!", "Congratulations to your sister! That's wonderful news."),
        ("I keep forgetting to water my plants.", "A reminder every few days could help."),
        ("I signed up for a photography workshop.", "That sounds like fun. Do you already have a camera?"),
        ("Traffic was terrible, it took me an hour to get home.",
         "Long commutes drain the energy out of a day. Hope you got to relax afterwards."),
        ("I finally cleaned out the garage.", "That's a big job! It must feel good to have it done."),
        ("Our team lunch got postponed because half the team is sick.",
         "Sounds like something is going around. Take care of yourself."),
        ("I'm trying to learn to juggle, it's harder than it looks.",
         "Start with two balls and add the third once the rhythm feels natural."),
        ("The wifi in our building has been flaky all week.",
         "Restarting the router sometimes helps; otherwise it may be the provider."),
        ("I lost my umbrella again, that's the third one this year.",
         "Maybe a bright colour would make it harder to leave behind!"),
        ("My manager asked me to give a talk at the all-hands.",
         "That's a nice sign of trust. Do you know what you'll talk about yet?"),
        ("I baked bread for the first time and it came out flat.",
         "The first loaf often does. The yeast or the proofing time are the usual suspects."),
        ("A friend is visiting from abroad soon.", "How nice! Do you have plans to show them around?"),
        ("The cat knocked a glass off the table at three in the morning.",
         "Cats and gravity experiments, a classic combination."),
        ("I started journaling in the evenings.", "Journaling is a great way to unwind. How has it been so far?"),
        ("Our dishwasher broke, so we're washing everything by hand.",
         "That's a pain. Hopefully the repair doesn't take long."),
        ("I'm organising a board game night for my friends.", "Fun! Do you have a favourite game to bring out?"),
        ("Work has been really hectic with the end of the quarter.",
         "End of quarter is always a crunch. Take a breather when it's over."),
        ("I tried a new barber and I'm not sure about the haircut.",
         "Haircuts usually look better after a few days once they settle."),
        ("My parents are finally learning to use video calls.", "That's lovely, it makes keeping in touch so much easier."),
    ),
    "zh": (
        ("今天办公室的打印机卡纸卡了三次。", "打印机总是在赶时间的时候出问题。最后修好了吗？"),
        ("我终于把那本很厚的小说看完了，结局有点失望。", "花了那么多时间，结局不满意确实挺可惜的。"),
        ("我侄子快满七岁了，我还不知道送他什么礼物。", "七岁的孩子挺好玩的。他喜欢拼装玩具还是画画？"),
        ("邻居在装修，每天早上八点就开始打钻。", "听着就很累。降噪耳机也许能帮上忙。"),
        ("我最近在努力早点睡觉，效果还行。", "一点点来就好，坚持几周就能感觉到变化。"),
        ("我的笔记本电脑电池现在只能撑两个小时。", "可以考虑换个电池，通常比买新电脑便宜。"),
        ("今天公司搞消防演习，折腾了好久。", "至少大家都知道安全出口在哪儿了。"),
        ("我得在暑假前把护照续签了。", "早点办是对的，有时候要等挺久。"),
        ("我昨晚看了一部讲章鱼的纪录片，它们太聪明了。", "确实，有的章鱼还能从里面把瓶盖拧开。"),
        ("地铁又停运了，我只好打车回家。", "又贵又麻烦。出门前可以先看看线路通知。"),
        ("我想把客厅重新刷一下，可能刷成浅绿色。", "浅绿色会让房间显得很安静，可以先刷一小块试试。"),
        ("我姐姐刚生了个女儿！", "恭喜你姐姐！真是好消息。"),
        ("我老是忘记给花浇水。", "可以设个提醒，每隔几天提醒一次。"),
        ("我报名了一个摄影课。", "听起来很有意思，你已经有相机了吗？"),
        ("今天路上堵得厉害，开了一个小时才到家。", "通勤太久真的很消耗精力，回家好好休息一下。"),
        ("我终于把车库收拾干净了。", "这可是个大工程，收拾完一定很舒服。"),
        ("我们团队聚餐推迟了，一半的人都感冒了。", "最近好像挺多人生病的，你也注意身体。"),
        ("我在学抛球杂耍，比想象的难多了。", "先从两个球开始练，节奏稳了再加第三个。"),
        ("我们楼里的网络这一周都不太稳定。", "可以先重启路由器试试，不行的话可能是运营商的问题。"),
        ("我又把伞弄丢了，今年第三把了。", "也许买把颜色鲜艳的，就不容易忘了。"),
        ("领导让我在全员大会上做个分享。", "这说明领导很信任你。想好讲什么了吗？"),
        ("我第一次自己烤面包，结果烤扁了。", "第一次很常见，多半是酵母或者发酵时间的问题。"),
        ("我有个朋友过阵子从国外回来看我。", "真好！有没有打算带他到处转转？"),
        ("猫半夜三点把桌上的杯子推到地上了。", "猫咪做重力实验，经典操作。"),
        ("我开始每天晚上写日记了。", "写日记是很好的放松方式，感觉怎么样？"),
        ("家里的洗碗机坏了，只能手洗。", "确实麻烦，希望维修不要等太久。"),
        ("我在给朋友们组织一个桌游之夜。", "好玩！你有最喜欢的桌游吗？"),
        ("季度末工作特别忙。", "季度末总是很紧张，忙完记得好好休息。"),
        ("我换了个理发师，对新发型不太满意。", "发型一般过几天会更自然一些。"),
        ("我爸妈终于学会用视频通话了。", "太好了，以后联系就方便多了。"),
    ),
}
SLOTS = {"en": EN, "zh": ZH}
